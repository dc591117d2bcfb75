//! The binary: `--help` documents every setting; SIGTERM stops it cleanly (exit status 0) with its
//! database intact; the first start prints the generated admin password once, the second does not.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn help_lists_every_setting() {
    let out = Command::new(env!("CARGO_BIN_EXE_floodgate-dashboard"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--bind",
        "--data-dir",
        "--database-url",
        "--admin-user",
        "--admin-password",
        "--registration-token",
        "--allow-cidrs",
        "--max-apps",
        "--max-machines-per-app",
        "--unhealthy-after-secs",
        "--fetch-interval-ms",
        "--agent-concurrency",
        "--agent-timeout-ms",
        "--second-retention-secs",
        "--minute-retention-secs",
        "--session-ttl-secs",
        "--secure-cookies",
        "--max-body-bytes",
        "--request-timeout-secs",
        "--static-dir",
        "FLOODGATE_ADMIN_PASSWORD",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}

/// Starts the binary on a free port with its data in `dir`; returns it once it serves, with the lines
/// it printed.
fn start(dir: &std::path::Path) -> (std::process::Child, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_floodgate-dashboard"))
        .args(["--bind", &format!("127.0.0.1:{}", free_port())])
        .arg("--data-dir")
        .arg(dir)
        .env_remove("FLOODGATE_ADMIN_PASSWORD")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let serving = line.starts_with("Floodgate dashboard on");
        lines.push(line);
        // The last line printed at start (the admin password, on a first start, comes before).
        if serving {
            break;
        }
    }
    std::thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            let _ = line;
        }
    });
    (child, lines)
}

fn terminate(child: &mut std::process::Child) -> std::process::ExitStatus {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    child.wait().unwrap()
}

#[test]
fn sigterm_stops_it_cleanly_and_the_password_is_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let (mut first, lines) = start(dir.path());
    assert!(
        lines
            .iter()
            .any(|l| l.contains("sign in as `admin` with password")),
        "{lines:?}"
    );
    assert!(
        terminate(&mut first).success(),
        "exit status 0 after SIGTERM"
    );
    assert!(dir.path().join("floodgate.db").exists());
    let (mut second, lines) = start(dir.path());
    assert!(
        !lines.iter().any(|l| l.contains("password")),
        "the password is printed on the first start only: {lines:?}"
    );
    assert!(terminate(&mut second).success());
}
