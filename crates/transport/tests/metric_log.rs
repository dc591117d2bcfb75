//! Sentinel-format metric log files: fat lines, the big-endian index, rolling by size and count.

use std::path::PathBuf;

use floodgate_core::stats::MetricLine;
use floodgate_transport::{MetricLog, fat_line};

const T0: u64 = 1_700_000_000_000; // 2023-11-14 22:13:20 UTC

fn line(ts: u64, resource: &str, pass: u64) -> MetricLine {
    MetricLine {
        timestamp: ts,
        resource: resource.into(),
        pass_qps: pass,
        block_qps: 1,
        success_qps: pass,
        exception_qps: 0,
        rt: 4,
        rt_sum: 4 * pass,
        occupied_pass_qps: 0,
        concurrency: 0,
        classification: 1,
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("floodgate-mlog-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn fat_lines_and_the_index() {
    assert_eq!(
        fat_line(&line(T0, "/foo/*", 1)),
        "1700000000000|2023-11-14 22:13:20|/foo/*|1|1|1|0|4|0|0|1"
    );
    let dir = temp_dir("index");
    let log = MetricLog::new(&dir, "my.app").unwrap();
    log.append(&[line(T0, "a", 1), line(T0, "b", 2)]).unwrap();
    log.append(&[line(T0 + 1000, "a", 3)]).unwrap();
    log.append(&[line(T0, "late", 9)]).unwrap(); // an older second is skipped
    let files = log.files().unwrap();
    assert_eq!(files.len(), 1);
    assert!(
        files[0].ends_with("my-app-metrics.log.2023-11-14"),
        "{files:?}"
    );
    let data = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(data.lines().count(), 3);
    let index = std::fs::read(format!("{}.idx", files[0].display())).unwrap();
    assert_eq!(index.len(), 32, "two seconds × (i64, i64)");
    let second = i64::from_be_bytes(index[16..24].try_into().unwrap());
    let offset = i64::from_be_bytes(index[24..32].try_into().unwrap());
    assert_eq!(
        second as u64,
        (T0 + 1000) / 1000,
        "seconds, as Sentinel writes them"
    );
    assert!(
        data[offset as usize..].starts_with("1700000001000|"),
        "the offset of the second's first line"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn files_roll_by_size_and_day_and_keep_the_newest() {
    let dir = temp_dir("roll");
    let log = MetricLog::new(&dir, "app").unwrap().with_limits(100, 3);
    for s in 0..10u64 {
        log.append(&[line(T0 + s * 1000, "resource-with-a-long-name", s)])
            .unwrap();
    }
    let files = log.files().unwrap();
    assert_eq!(files.len(), 3, "at most 3 kept: {files:?}");
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("app-metrics.log.2023-11-14"))
    );
    for f in &files {
        assert!(PathBuf::from(format!("{}.idx", f.display())).exists());
    }
    // A new day starts a new file.
    log.append(&[line(T0 + 86_400_000, "r", 1)]).unwrap();
    let last = log.files().unwrap().last().cloned().unwrap();
    assert!(last.ends_with("app-metrics.log.2023-11-15"), "{last:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The app name comes from configuration: a path in it must not put the files outside the directory.
#[test]
fn an_app_name_with_a_path_stays_in_the_directory() {
    let dir = temp_dir("escape");
    let log = MetricLog::new(&dir, "../../evil/app").unwrap();
    log.append(&[line(T0, "R", 1)]).unwrap();
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        files
            .iter()
            .any(|f| f.starts_with("------evil-app-metrics.log")),
        "{files:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Files deleted while the log writes (an operator clearing a full disk), or their directory, are made
/// again at the next write, as Sentinel's `MetricWriter` does; a line older than the last one never
/// starts a file of its own day.
#[test]
fn deleted_files_are_made_again_and_old_lines_start_no_file() {
    let dir = temp_dir("deleted");
    let log = MetricLog::new(&dir, "app").unwrap();
    log.append(&[line(T0, "a", 1)]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    log.append(&[line(T0 + 1000, "a", 2)]).unwrap();
    let files = log.files().unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    let data = std::fs::read_to_string(&files[0]).unwrap();
    assert!(data.starts_with("1700000001000|"), "{data}");
    assert!(std::path::Path::new(&format!("{}.idx", files[0].display())).exists());

    let day_before = T0 - 86_400_000;
    log.append(&[line(day_before, "late", 9)]).unwrap();
    assert_eq!(log.files().unwrap(), files, "no file for the day before");
    let _ = std::fs::remove_dir_all(&dir);
}
