//! A real `redis-server` for the tests: started on a free loopback port with no persistence, in a
//! directory of its own, and killed when dropped. Debian's `redis-server` package provides it
//! (`.ci/run` installs it); `FLOODGATE_REDIS_SERVER` names another binary.

#![allow(dead_code, unreachable_pub)]

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A running `redis-server`.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    cluster: bool,
    dir: tempfile::TempDir,
}

impl RedisServer {
    /// A standalone server.
    pub fn start() -> Self {
        Self::start_on(free_port(), false)
    }

    /// A one-node Redis Cluster holding every slot: keys of one script must share a slot, as on a
    /// cluster of many nodes.
    pub fn start_cluster() -> Self {
        let server = Self::start_on(free_port(), true);
        let client = redis::Client::open(server.url()).unwrap();
        let mut connection = client.get_connection().unwrap();
        redis::cmd("CLUSTER")
            .arg("ADDSLOTSRANGE")
            .arg(0)
            .arg(16383)
            .exec(&mut connection)
            .unwrap();
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query(&mut connection)
                .unwrap();
            if info.contains("cluster_state:ok") {
                break server;
            }
            assert!(
                Instant::now() < deadline,
                "the cluster did not come up: {info}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn start_on(port: u16, cluster: bool) -> Self {
        let mut server = RedisServer {
            child: None,
            port,
            cluster,
            dir: tempfile::tempdir().unwrap(),
        };
        server.restart();
        server
    }

    /// The server's address, `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server (its data goes with it).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port, empty.
    pub fn restart(&mut self) {
        self.stop();
        let binary: PathBuf = std::env::var_os("FLOODGATE_REDIS_SERVER")
            .map_or_else(|| "redis-server".into(), PathBuf::from);
        let mut command = Command::new(&binary);
        command
            .current_dir(self.dir.path())
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if self.cluster {
            command.args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ]);
        }
        let child = command.spawn().unwrap_or_else(|e| {
            panic!(
                "{} could not start ({e}): install Debian's redis-server package, or name a \
                 binary in FLOODGATE_REDIS_SERVER",
                binary.display()
            )
        });
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A plain connection, to look at what the tests wrote.
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
