//! A real `nats-server` on a free port for the broker tests, killed on drop.

use std::net::TcpListener as StdListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{HANG_GUARD, TempDir};

/// Large enough for the relay's default 16 MiB frames (the server's default is 1 MB).
pub const MAX_PAYLOAD: usize = 20 * 1024 * 1024;

pub struct NatsServer {
    pub port: u16,
    child: Option<Child>,
    dir: TempDir,
}

impl NatsServer {
    /// Starts `nats-server` on a free port of 127.0.0.1 and waits until it accepts connections.
    pub fn start() -> Self {
        Self::start_with(MAX_PAYLOAD)
    }

    /// [`NatsServer::start`] with another `max_payload`.
    pub fn start_with(max_payload: usize) -> Self {
        let port = StdListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = TempDir::new("nats");
        dir.write("nats.conf", &format!("max_payload: {max_payload}\n"));
        let mut server = NatsServer { port, child: None, dir };
        server.restart();
        server
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kills the server at once (no lame-duck mode), as a crash or a pulled cable would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port.
    pub fn restart(&mut self) {
        self.kill();
        let config: PathBuf = self.dir.path().join("nats.conf");
        let child = Command::new(binary())
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string(), "-c"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start nats-server ({e}): the broker tests need it; scripts/setup.sh \
                     test installs it (Debian package nats-server), or set NATS_SERVER to its path"
                )
            });
        self.child = Some(child);
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(start.elapsed() < HANG_GUARD, "nats-server did not listen (hang guard)");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn binary() -> String {
    std::env::var("NATS_SERVER").unwrap_or_else(|_| "nats-server".into())
}
