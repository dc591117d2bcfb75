//! Server-rendered SVG line charts of a resource's QPS: a time axis with labels, a value axis, one
//! line per series, a gap where a second (or minute) has no data, and a readout under the pointer —
//! each point's time and values are the `<title>` of an invisible column over it, which browsers
//! show on hover and screen readers read.
//!
//! The SVG is built as text: every string that reaches it (series names, times) is made here, and
//! numbers are formatted, so nothing from outside is written unescaped.

use std::fmt::Write as _;

/// One series: its name, its colour (a CSS class), and a value per point (`None` for no data).
#[derive(Debug, Clone)]
pub struct Series<'a> {
    /// The legend's name.
    pub name: &'static str,
    /// The CSS class that colours the line.
    pub class: &'static str,
    /// One value per x, `None` where there is no data.
    pub values: &'a [Option<f64>],
}

/// A chart's frame: the x positions (ms since the epoch), the span shown, and the step between two
/// points (1 s or 1 min) beyond which two points are not joined.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// The time of each point.
    pub xs: &'a [i64],
    /// The first time shown.
    pub from: i64,
    /// The last time shown.
    pub to: i64,
    /// The resolution (ms).
    pub step: i64,
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 200.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 8.0;
const BOTTOM: f64 = 24.0;

/// `HH:MM:SS` (UTC) of `ms`.
pub fn clock_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// A round step for an axis covering `0..=max` with about `ticks` ticks.
fn nice_step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    let fraction = raw / magnitude;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

fn number(v: f64) -> String {
    if v.fract().abs() < 1e-9 {
        format!("{}", v as i64)
    } else {
        format!("{v:.1}")
    }
}

/// The most readout columns a chart has: past that, each column covers several points and reads
/// out the last of them (a page of 50 charts of 300 points stays light to refresh).
pub const MAX_READOUT_COLUMNS: usize = 150;

/// The SVG of `series` over `frame`, labelled `label` (for screen readers). With `readout`, the
/// chart has the columns that read values out under the pointer: the drawn series' and those of
/// `readout` (series not drawn here, such as the RT of a QPS chart).
pub fn line_chart(
    label: &str,
    frame: Frame<'_>,
    series: &[Series<'_>],
    unit: &str,
    readout: Option<&[Series<'_>]>,
) -> String {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let span = (frame.to - frame.from).max(1) as f64;
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(0.0f64, |m, v| m.max(*v));
    let step = nice_step(if max > 0.0 { max } else { 1.0 }, 4.0);
    let top = (max / step).ceil().max(1.0) * step;
    let x_of = |t: i64| LEFT + (t - frame.from) as f64 / span * plot_w;
    let y_of = |v: f64| TOP + plot_h - v / top * plot_h;

    let mut svg = String::with_capacity(4096);
    let _ = write!(
        svg,
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{}\" \
         xmlns=\"http://www.w3.org/2000/svg\">",
        escape(label)
    );
    // Value axis: gridlines and labels.
    let mut v = 0.0;
    while v <= top + step / 2.0 {
        let y = y_of(v);
        let _ = write!(
            svg,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
             <text class=\"axis\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            WIDTH - RIGHT,
            LEFT - 4.0,
            y + 4.0,
            number(v)
        );
        v += step;
    }
    // Time axis: about five labels.
    let ticks = 5;
    for i in 0..=ticks {
        let t = frame.from + (frame.to - frame.from) * i / ticks;
        let x = x_of(t);
        let anchor = match i {
            0 => "start",
            i if i == ticks => "end",
            _ => "middle",
        };
        let _ = write!(
            svg,
            "<line class=\"tick\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>\
             <text class=\"axis\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text>",
            TOP + plot_h,
            TOP + plot_h + 4.0,
            HEIGHT - 6.0,
            clock_time(t)
        );
    }
    let _ = write!(
        svg,
        "<text class=\"axis unit\" x=\"4\" y=\"{:.1}\">{}</text>",
        TOP + 8.0,
        escape(unit)
    );
    // Lines, broken where points are more than one step apart or missing.
    for s in series {
        let mut path = String::new();
        let mut previous: Option<i64> = None;
        for (x, value) in frame.xs.iter().zip(s.values) {
            match value {
                Some(v) => {
                    let joined = previous.is_some_and(|p| x - p <= frame.step);
                    let _ = write!(
                        path,
                        "{}{:.1},{:.1} ",
                        if joined { "L" } else { "M" },
                        x_of(*x),
                        y_of(*v)
                    );
                    previous = Some(*x);
                }
                None => previous = None,
            }
        }
        if !path.is_empty() {
            let _ = write!(
                svg,
                "<path class=\"line {}\" d=\"{}\"><title>{}</title></path>",
                s.class,
                path.trim_end(),
                s.name
            );
        }
    }
    // The readout: columns over the points, each titled with a time and the values then.
    if let Some(extra) = readout {
        let n = frame.xs.len();
        let per_column = n.div_ceil(MAX_READOUT_COLUMNS).max(1);
        let mut first = 0;
        while first < n {
            let last = (first + per_column).min(n) - 1;
            let x0 = x_of(frame.xs[first]) - (frame.step as f64 / span * plot_w) / 2.0;
            let x1 = x_of(frame.xs[last]) + (frame.step as f64 / span * plot_w) / 2.0;
            let mut title = clock_time(frame.xs[last]);
            for s in series.iter().chain(extra) {
                if let Some(Some(v)) = s.values.get(last) {
                    let _ = write!(title, " · {} {}", s.name, number(*v));
                }
            }
            let _ = write!(
                svg,
                "<rect class=\"hover\" x=\"{:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{plot_h}\">\
                 <title>{title}</title></rect>",
                x0.max(LEFT),
                (x1 - x0).max(1.0)
            );
            first = last + 1;
        }
    }
    svg.push_str("</svg>");
    svg
}

/// A small line of `values` (no axes), for the apps overview.
pub fn sparkline(values: &[f64]) -> String {
    const W: f64 = 120.0;
    const H: f64 = 24.0;
    let max = values.iter().fold(0.0f64, |m, v| m.max(*v)).max(1.0);
    let n = values.len().max(2) as f64 - 1.0;
    let mut points = String::new();
    for (i, v) in values.iter().enumerate() {
        let _ = write!(
            points,
            "{:.1},{:.1} ",
            i as f64 / n * W,
            H - 1.0 - v / max * (H - 2.0)
        );
    }
    format!(
        "<svg class=\"sparkline\" viewBox=\"0 0 {W} {H}\" aria-hidden=\"true\" \
         xmlns=\"http://www.w3.org/2000/svg\"><polyline class=\"line pass\" points=\"{}\"/></svg>",
        points.trim_end()
    )
}

/// `s` with `& < > " '` escaped for XML text and attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_break_the_line_and_points_have_readouts() {
        let xs = [0, 1000, 2000, 5000];
        let pass = [Some(10.0), Some(20.0), Some(15.0), Some(5.0)];
        let svg = line_chart(
            "a <b>",
            Frame {
                xs: &xs,
                from: 0,
                to: 5000,
                step: 1000,
            },
            &[Series {
                name: "pass",
                class: "pass",
                values: &pass,
            }],
            "QPS",
            Some(&[]),
        );
        assert!(svg.contains("aria-label=\"a &lt;b&gt;\""));
        // Three joined points, then a new segment after the gap.
        let d = svg.split("d=\"").nth(1).unwrap().split('"').next().unwrap();
        assert_eq!(d.matches('M').count(), 2, "{d}");
        assert_eq!(d.matches('L').count(), 2, "{d}");
        assert!(svg.contains("<title>00:00:01 · pass 20</title>"));
        assert!(svg.contains(">00:00:05<"), "time labels");
        assert!(svg.contains(">20<"), "value labels");
    }

    #[test]
    fn readout_columns_are_bounded() {
        let xs: Vec<i64> = (0..600).map(|i| i * 1000).collect();
        let v: Vec<Option<f64>> = xs.iter().map(|_| Some(1.0)).collect();
        let frame = Frame {
            xs: &xs,
            from: 0,
            to: 599_000,
            step: 1000,
        };
        let series = [Series {
            name: "pass",
            class: "pass",
            values: &v,
        }];
        let with = line_chart("x", frame, &series, "QPS", Some(&[]));
        assert_eq!(with.matches("class=\"hover\"").count(), MAX_READOUT_COLUMNS);
        let without = line_chart("x", frame, &series, "QPS", None);
        assert_eq!(without.matches("class=\"hover\"").count(), 0);
    }

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(100.0, 4.0), 50.0);
        assert_eq!(nice_step(7.0, 4.0), 2.0);
        assert_eq!(nice_step(0.3, 4.0), 0.1);
    }
}
