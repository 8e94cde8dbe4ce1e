//! Processes the tests start: a child killed when dropped, a free loopback port and waiting for
//! a server to listen on it; and what Linux's `/proc` says of a process's CPU, for the benches
//! that print the CPU a process used beside its anchor's.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A child process, killed (and reaped) when dropped.
#[derive(Debug)]
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `command` (an `ask-user inbox`, say) with its stdout piped and its stderr dropped,
/// and reads the first line it prints (the inbox's URL with its token), trimmed; killed when the
/// returned [`Running`] is dropped.
///
/// # Panics
///
/// When the command cannot start or prints no line.
pub fn start_reading_line(command: &mut Command) -> (Running, String) {
    use std::io::BufRead as _;
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the command starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout is piped"))
        .read_line(&mut line)
        .expect("the command prints a line");
    (Running(child), line.trim().to_owned())
}

/// Posts `body` as JSON to `url`, as a page's form or a notification's button does, from a
/// test's own thread; it must succeed.
pub fn post_json(url: &str, body: &str) {
    let (url, body) = (url.to_owned(), body.to_owned());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (status, text) = runtime.block_on(async {
        let response = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        (response.status(), response.text().await.unwrap())
    });
    assert!(status.is_success(), "{status}: {text}");
}

/// An ntfy- or webhook-shaped receiver on a loopback port: every JSON body posted to it (any
/// path), in order; it answers `200 {"id":1}`.
pub fn json_receiver() -> (u16, std::sync::mpsc::Receiver<serde_json::Value>) {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let _ = reader.get_mut().write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 9\r\nconnection: close\r\n\r\n{\"id\":1}",
            );
            if let Ok(message) = serde_json::from_slice(&body) {
                let _ = tx.send(message);
            }
        }
    });
    (port, rx)
}

/// A loopback TCP port nobody listens on now.
pub fn free_port() -> u16 {
    (std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something listens on loopback `port`; `what` names it when it never does
/// within `within`.
pub fn wait_for_port(port: u16, within: Duration, what: &str) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < within, "{what} never listened on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `utime + stime` of the process `pid` (its number, or `"self"`), in clock ticks; 0 when it
/// cannot be read (a process that has exited, a system without `/proc`).
pub fn cpu_ticks(pid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command's closing parenthesis (a command may hold spaces and
    // parentheses); utime and stime are the 12th and 13th of them.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    field(11) + field(12)
}

/// The clock ticks in a second (`getconf CLK_TCK`; 100, Linux's, when it cannot be asked).
pub fn clock_ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_used_cpu_and_an_exited_one_none() {
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(50) {
            std::hint::black_box(spin.elapsed());
        }
        assert!(cpu_ticks("self") > 0, "50 ms of CPU is at least one tick");
        assert_eq!(cpu_ticks("0"), 0, "no process 0 in /proc");
        assert!(clock_ticks_per_second() >= 1.0);
    }
}
