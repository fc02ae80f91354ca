//! The fleet's bus: a real `redis-server` (Debian's package; `.ci/redis`
//! installs it) on a loopback port of its own, with no persistence, that
//! a test or the demo can kill and start again on the same port, as an
//! operator's Redis going away and coming back; and a fleet whose nodes
//! are joined to it ([`Fleet::start_on_bus`]).

use crate::process::{Guard, WorkDir};
use crate::{Fleet, Kind};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

impl Fleet {
    /// [`Fleet::start`], every node joined to the bus on `redis`
    /// (`--redis-url`), with the fleet's bus key file (`--bus-key-file`:
    /// [`Fleet::bus_key_file`]).
    pub fn start_on_bus(
        kind: Kind,
        n: usize,
        flags: &[String],
        redis: &RedisServer,
    ) -> Result<Fleet, String> {
        Fleet::start_in(kind, n, flags, Some(redis.url()))
    }
}

/// A running (or killed) `redis-server`. Dropping it kills it.
pub struct RedisServer {
    program: PathBuf,
    /// Where it listens, always the same port.
    pub addr: SocketAddr,
    dir: WorkDir,
    process: Option<Guard>,
    /// Times it was started.
    starts: usize,
}

impl RedisServer {
    /// `redis-server` on PATH, or in /usr/bin where Debian puts it.
    pub fn locate() -> Result<PathBuf, String> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain(["/usr/bin", "/usr/sbin"].map(PathBuf::from))
            .map(|dir| dir.join("redis-server"))
            .find(|candidate| candidate.is_file())
            .ok_or_else(|| {
                "redis-server is not installed (not on PATH, nor in /usr/bin); \
                 on Debian or Ubuntu: sudo apt-get install -y redis-server, or bash .ci/redis"
                    .to_string()
            })
    }

    /// Starts one on a free loopback port; returns once it answers `PING`.
    pub fn start() -> Result<RedisServer, String> {
        let program = RedisServer::locate()?;
        let dir = WorkDir::new("redis").map_err(|e| format!("redis work dir: {e}"))?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free loopback port: {e}"))?;
        let mut server = RedisServer {
            program,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            dir,
            process: None,
            starts: 0,
        };
        server.restart()?;
        Ok(server)
    }

    /// The URL nodes are given (`--redis-url`).
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Kills it at once (SIGKILL), as a crash would: its connections close,
    /// its keys are gone.
    pub fn kill(&mut self) -> Result<(), String> {
        match self.process.take() {
            Some(mut process) => process
                .kill()
                .map(drop)
                .map_err(|e| format!("redis-server: kill: {e}")),
            None => Ok(()),
        }
    }

    /// Starts it (again) on its port; returns once it answers. It starts
    /// empty unless a client made it `SAVE` a snapshot before (into its
    /// directory, which it loads from), as a Redis restored from a backup.
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill()?;
        self.starts += 1;
        let log = std::fs::File::create(self.dir.path().join(format!("redis-{}.log", self.starts)))
            .map_err(|e| format!("redis log: {e}"))?;
        let err = log.try_clone().map_err(|e| format!("redis log: {e}"))?;
        let mut command = Command::new(&self.program);
        command
            .args(["--port", &self.addr.port().to_string()])
            .args(["--bind", "127.0.0.1"])
            // Nothing written to disk unless asked (`SAVE`), so a restart
            // is an empty Redis, as one without persistence comes back.
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(["--daemonize", "no", "--loglevel", "warning"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        let mut process = Guard::spawn(command, "redis-server")
            .map_err(|e| format!("cannot start {}: {e}", self.program.display()))?;
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = process.try_wait() {
                return Err(format!(
                    "redis-server exited ({status}) on {}; its log:\n{}",
                    self.addr,
                    self.log()
                ));
            }
            if ping(self.addr) {
                self.process = Some(process);
                return Ok(());
            }
            if Instant::now() >= until {
                return Err(format!("redis-server does not answer on {}", self.addr));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether it is running (started and not killed).
    pub fn is_running(&self) -> bool {
        self.process.is_some()
    }

    /// Its logs, all starts.
    pub fn log(&self) -> String {
        (1..=self.starts)
            .filter_map(|n| {
                std::fs::read_to_string(self.dir.path().join(format!("redis-{n}.log"))).ok()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Whether a Redis at `addr` answers `PING` (RESP, by hand: one line each
/// way, no client needed).
fn ping(addr: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut answer = [0u8; 7];
    stream.read_exact(&mut answer).is_ok() && &answer == b"+PONG\r\n"
}
