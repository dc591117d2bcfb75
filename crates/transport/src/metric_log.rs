//! Sentinel-format metric log files: `<app>-metrics.log.<yyyy-MM-dd>[.<n>]` with an `.idx` index beside
//! each, so that Sentinel's tooling can read them.
//!
//! One "fat" line per resource per second,
//!
//! ```text
//! timestamp|yyyy-MM-dd HH:mm:ss|resource|passQps|blockQps|successQps|exceptionQps|rt|occupiedPassQps|concurrency|classification
//! ```
//!
//! (UTC time). The index holds one `(second: i64, offset: i64)` big-endian pair per second, written when
//! the second's first line is appended. A new file starts when the day changes or the file reaches 50 MiB;
//! at most 6 files are kept (the oldest is deleted with its index).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use floodgate_core::stats::{MetricLine, utc_datetime};

/// Sentinel's `csp.sentinel.metric.file.single.size`.
const SINGLE_FILE_BYTES: u64 = 50 * 1024 * 1024;
/// Sentinel's `csp.sentinel.metric.file.total.count`.
const TOTAL_FILES: usize = 6;

/// The metric log of one app.
#[derive(Debug)]
pub struct MetricLog {
    dir: PathBuf,
    base: String,
    single_file_bytes: u64,
    total_files: usize,
    state: Mutex<Option<Current>>,
}

#[derive(Debug)]
struct Current {
    date: String,
    /// The data file's and the index's paths (checked before each write: files deleted meanwhile, by
    /// an operator clearing a full disk, are made again, as Sentinel's `MetricWriter` does).
    paths: [PathBuf; 2],
    data: BufWriter<File>,
    index: BufWriter<File>,
    size: u64,
    last_second: u64,
}

/// The fat line of `l`.
pub fn fat_line(l: &MetricLine) -> String {
    format!(
        "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
        l.timestamp,
        utc_datetime(l.timestamp / 1000),
        l.resource.replace(['|', '\n', '\r'], "_"),
        l.pass_qps,
        l.block_qps,
        l.success_qps,
        l.exception_qps,
        l.rt,
        l.occupied_pass_qps,
        l.concurrency,
        l.classification
    )
}

impl MetricLog {
    /// A log for `app` in `dir` (created if missing).
    pub fn new(dir: &Path, app: &str) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(MetricLog {
            dir: dir.to_path_buf(),
            // Only the app name's own characters: a name with a path separator must not put the
            // files anywhere but `dir`.
            base: format!("{}-metrics.log", app.replace(['.', '/', '\\', ':'], "-")),
            single_file_bytes: SINGLE_FILE_BYTES,
            total_files: TOTAL_FILES,
            state: Mutex::new(None),
        })
    }

    /// A log with other rolling limits (for tests).
    pub fn with_limits(mut self, single_file_bytes: u64, total_files: usize) -> Self {
        self.single_file_bytes = single_file_bytes;
        self.total_files = total_files.max(1);
        self
    }

    /// The data files, oldest first.
    pub fn files(&self) -> std::io::Result<Vec<PathBuf>> {
        let prefix = format!("{}.", self.base);
        let mut files: Vec<(String, u32, PathBuf)> = std::fs::read_dir(&self.dir)?
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let rest = name.strip_prefix(&prefix)?;
                if rest.ends_with(".idx") || rest.starts_with('.') {
                    return None;
                }
                let (date, seq) = match rest.split_once('.') {
                    Some((d, n)) => (d.to_owned(), n.parse().ok()?),
                    None => (rest.to_owned(), 0),
                };
                Some((date, seq, e.path()))
            })
            .collect();
        files.sort();
        Ok(files.into_iter().map(|(_, _, p)| p).collect())
    }

    fn open(&self, date: &str) -> std::io::Result<Current> {
        // The directory too may have been removed.
        std::fs::create_dir_all(&self.dir)?;
        let prefix = format!("{}.{date}", self.base);
        let next = self
            .files()?
            .iter()
            .filter_map(|p| {
                let name = p.file_name()?.to_string_lossy().into_owned();
                let rest = name.strip_prefix(&prefix)?;
                match rest.strip_prefix('.') {
                    None if rest.is_empty() => Some(0u32),
                    Some(n) => n.parse::<u32>().ok(),
                    None => None,
                }
            })
            .max()
            .map_or(0, |n| n + 1);
        let name = if next == 0 {
            prefix
        } else {
            format!("{prefix}.{next}")
        };
        let path = self.dir.join(&name);
        let data = OpenOptions::new().create(true).append(true).open(&path)?;
        let size = data.metadata()?.len();
        let index_path = self.dir.join(format!("{name}.idx"));
        let index = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&index_path)?;
        // Keep at most `total_files` data files.
        let mut files = self.files()?;
        while files.len() > self.total_files {
            let oldest = files.remove(0);
            let _ = std::fs::remove_file(&oldest);
            let _ = std::fs::remove_file(PathBuf::from(format!("{}.idx", oldest.display())));
        }
        Ok(Current {
            date: date.to_owned(),
            paths: [path, index_path],
            data: BufWriter::new(data),
            index: BufWriter::new(index),
            size,
            last_second: 0,
        })
    }

    /// Appends `lines` (in time order); seconds older than the last one written are skipped.
    pub fn append(&self, lines: &[MetricLine]) -> std::io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state
            .as_ref()
            .is_some_and(|c| c.paths.iter().any(|p| !p.exists()))
        {
            *state = None;
        }
        for line in lines {
            let second = line.timestamp / 1000;
            // Before a roll: an older line must not start a file of its own day.
            if state.as_ref().is_some_and(|c| second < c.last_second) {
                continue;
            }
            let date = utc_datetime(second)[..10].to_owned();
            let roll = match state.as_ref() {
                None => true,
                Some(c) => c.date != date || c.size >= self.single_file_bytes,
            };
            if roll {
                if let Some(mut old) = state.take() {
                    old.data.flush()?;
                    old.index.flush()?;
                }
                *state = Some(self.open(&date)?);
            }
            let Some(current) = state.as_mut() else {
                continue;
            };
            if second < current.last_second {
                continue;
            }
            if second > current.last_second {
                // The second, not the millisecond (Sentinel's readers seek by `beginMs / 1000`).
                current.index.write_all(&(second as i64).to_be_bytes())?;
                current
                    .index
                    .write_all(&(current.size as i64).to_be_bytes())?;
                current.last_second = second;
            }
            let text = fat_line(line);
            current.data.write_all(text.as_bytes())?;
            current.data.write_all(b"\n")?;
            current.size += text.len() as u64 + 1;
        }
        if let Some(current) = state.as_mut() {
            current.data.flush()?;
            current.index.flush()?;
        }
        Ok(())
    }
}
