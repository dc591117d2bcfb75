//! The builder checks every setting when the engine is built and adjusts none to fit.

use std::time::Duration;

use floodgate_core::{ConfigError, Floodgate, ManualClock};

const T0: u64 = 1_700_000_000_000;

#[test]
fn the_default_settings_build() {
    assert!(Floodgate::builder().try_build().is_ok());
}

#[test]
fn each_invalid_setting_is_named_and_nothing_is_built() {
    let window = Floodgate::builder().second_window(3, 900).try_build();
    assert!(matches!(window, Err(ConfigError::Window(_))), "{window:?}");
    assert_eq!(
        Floodgate::builder()
            .cold_factor(f64::INFINITY)
            .try_build()
            .unwrap_err(),
        ConfigError::ColdFactor(f64::INFINITY)
    );
    assert_eq!(
        Floodgate::builder()
            .occupy_timeout(Duration::from_millis(1001))
            .try_build()
            .unwrap_err(),
        ConfigError::OccupyTimeout {
            timeout: Duration::from_millis(1001),
            interval_ms: 1000,
        },
        "longer than the window: refused, not shortened"
    );
    assert_eq!(
        Floodgate::builder()
            .param_cache_capacity(0)
            .try_build()
            .unwrap_err(),
        ConfigError::ParamCacheCapacity
    );
}

#[test]
fn the_occupy_timeout_is_checked_against_the_window_it_is_built_with() {
    // Set in either order: the check runs at build time, on the final window.
    let timeout = Duration::from_millis(800);
    assert!(
        Floodgate::builder()
            .occupy_timeout(timeout)
            .second_window(2, 500)
            .try_build()
            .is_err()
    );
    assert!(
        Floodgate::builder()
            .second_window(2, 500)
            .occupy_timeout(Duration::from_millis(500))
            .try_build()
            .is_ok(),
        "the whole interval is allowed"
    );
    assert!(
        Floodgate::builder()
            .second_window(1, 200)
            .try_build()
            .is_ok(),
        "the default timeout (500 ms) does not make a shorter window invalid"
    );
}

#[test]
fn a_short_window_with_the_default_timeout_still_borrows_from_the_next_window() {
    // A 200 ms window: the default occupy timeout is the interval, 200 ms.
    let clock = ManualClock::new(T0);
    let fg = Floodgate::builder()
        .clock(clock.clone())
        .second_window(1, 200)
        .build();
    fg.load_rules_json(
        floodgate_core::RuleType::Flow,
        r#"[{"resource":"R","count":5}]"#,
    )
    .unwrap();
    clock.set(T0 + 50);
    drop(fg.entry("R").enter().unwrap());
    let waited = fg
        .entry("R")
        .prioritized()
        .enter()
        .expect("borrows the next window")
        .waited();
    assert!(
        waited > Duration::ZERO && waited <= Duration::from_millis(200),
        "{waited:?}"
    );
}

#[test]
#[should_panic(expected = "invalid Floodgate setting: cold factor must be a number > 1, got 0.5")]
fn build_panics_on_an_invalid_setting_with_its_error() {
    let _ = Floodgate::builder().cold_factor(0.5).build();
}
