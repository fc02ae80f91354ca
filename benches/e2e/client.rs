//! The raw HTTP/1.1 client: hand-written, blocking, over
//! `std::net::TcpStream` (Content-Length and chunked bodies, JSON or SSE),
//! so that it costs the same against every server and shares no code with
//! any of them (nor with the workspace's test client, on purpose).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Instant;

const PROTOCOL: &str = "2025-11-25";

/// The headers of a 2026-07-28 `tools/call` of `echo` (`--modern`): no
/// session; the version, method and name given as headers as well as in
/// the body, as that revision asks.
/// What the official Python SDK 2.3 client sends beside `Host`, the
/// body's two headers and `Accept` on a 2026-07-28 `tools/call` of `echo`
/// (captured on the wire, 2026-12-05; the TypeScript SDK v2 client sends
/// as many headers, with `Accept-Language` and `Sec-Fetch-Mode` instead of
/// `Connection`).
const MODERN_HEADERS: &str = "Accept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n\
     User-Agent: python-httpx2/2.16.2\r\nMCP-Protocol-Version: 2026-07-28\r\n\
     Mcp-Method: tools/call\r\nMcp-Name: echo\r\n";

/// A response, read whole.
struct Response {
    status: u16,
    session_id: Option<String>,
    content_type: Option<String>,
    body: Vec<u8>,
}

/// One keep-alive connection to one server, reopened if the server closes
/// it.
pub struct Client {
    addr: SocketAddr,
    host: String,
    path: String,
    conn: Option<BufReader<TcpStream>>,
    request: Vec<u8>,
    /// Each request's latency in ns (from before its first byte is written
    /// to after its answer's last byte is read), in the order sent.
    pub latencies: Vec<u64>,
}

impl Client {
    pub fn new(addr: SocketAddr, path: &str) -> Client {
        Client {
            addr,
            host: addr.to_string(),
            path: path.to_string(),
            conn: None,
            request: Vec::with_capacity(1024),
            latencies: Vec::new(),
        }
    }

    fn send(&mut self, method: &str, path: &str, session: Option<&str>, body: &str) -> Response {
        self.send_with(method, path, session, "", body)
    }

    /// [`Client::send`] with `extra` header lines (each ending in CRLF)
    /// after `Accept`.
    fn send_with(
        &mut self,
        method: &str,
        path: &str,
        session: Option<&str>,
        extra: &str,
        body: &str,
    ) -> Response {
        self.request.clear();
        let r = &mut self.request;
        write!(r, "{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.host).unwrap();
        if !body.is_empty() {
            write!(
                r,
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            )
            .unwrap();
        }
        r.extend_from_slice(b"Accept: application/json, text/event-stream\r\n");
        r.extend_from_slice(extra.as_bytes());
        if let Some(id) = session {
            write!(
                r,
                "Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: {PROTOCOL}\r\n"
            )
            .unwrap();
        }
        r.extend_from_slice(b"\r\n");
        r.extend_from_slice(body.as_bytes());
        // One retry on a fresh connection if the server closed an idle one.
        let start = Instant::now();
        for attempt in 0..2 {
            if self.conn.is_none() {
                let stream = TcpStream::connect(self.addr).expect("connect");
                stream.set_nodelay(true).unwrap();
                self.conn = Some(BufReader::with_capacity(16 * 1024, stream));
            }
            let conn = self.conn.as_mut().unwrap();
            if conn.get_mut().write_all(&self.request).is_ok() {
                match read_response(conn) {
                    Ok((response, keep)) => {
                        self.latencies.push(start.elapsed().as_nanos() as u64);
                        if !keep {
                            self.conn = None;
                        }
                        return response;
                    }
                    Err(e) if attempt == 0 => {
                        let _ = e;
                    }
                    Err(e) => panic!("{method} {path}: {e}"),
                }
            }
            self.conn = None;
        }
        panic!("{method} {path}: the server closed the connection twice")
    }

    /// `initialize`: the new session's id; `Err` (what came back) unless
    /// the answer is 200 with an `MCP-Session-Id` and a result for id 1.
    pub fn initialize(&mut self) -> Result<String, String> {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{PROTOCOL}","capabilities":{{}},"clientInfo":{{"name":"e2e","version":"0"}}}}}}"#
        );
        let path = self.path.clone();
        let r = self.send("POST", &path, None, &body);
        let text = || String::from_utf8_lossy(&r.body).trim().to_string();
        if r.status != 200 || !has_id(&r.body, 1) || !contains(&r.body, b"\"protocolVersion\"") {
            return Err(format!("initialize: {} {}", r.status, text()));
        }
        r.session_id
            .clone()
            .ok_or_else(|| format!("initialize: no MCP-Session-Id in {} {}", r.status, text()))
    }

    /// `notifications/initialized` in session `id`: 202 (or 200).
    pub fn initialized(&mut self, id: &str) -> Result<(), String> {
        let path = self.path.clone();
        let r = self.send(
            "POST",
            &path,
            Some(id),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        match r.status {
            202 | 200 => Ok(()),
            s => Err(format!(
                "notifications/initialized: {s} {}",
                String::from_utf8_lossy(&r.body).trim()
            )),
        }
    }

    /// `DELETE` of session `id`: any 2xx (200 or 204 here; rmcp answers
    /// 202).
    pub fn delete(&mut self, id: &str) -> Result<(), String> {
        let path = self.path.clone();
        let r = self.send("DELETE", &path, Some(id), "");
        if (200..300).contains(&r.status) {
            Ok(())
        } else {
            Err(format!(
                "DELETE: {} {}",
                r.status,
                String::from_utf8_lossy(&r.body).trim()
            ))
        }
    }

    /// One session's life: initialize, initialized, DELETE, each answer
    /// checked.
    pub fn session(&mut self) -> Result<(), String> {
        let id = self.initialize()?;
        self.initialized(&id)?;
        self.delete(&id)
    }

    /// One 2026-07-28 request (`--modern`): `tools/call` of `echo` with
    /// `{"text":"hi"}`, request id `id`, no session, its headers and its
    /// `_meta` (protocol version, client info, client capabilities) as the
    /// official Python SDK 2.3 client sends them.
    fn modern_request(&mut self, id: u64) -> Response {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"mcp","version":"0.1.0"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
        );
        let path = self.path.clone();
        self.send_with("POST", &path, None, MODERN_HEADERS, &body)
    }

    /// [`Client::modern_request`], checked: `Ok` if the answer is 200 with
    /// `resultType` `"complete"`, the request's own id and the echoed text
    /// (in the JSON answer, or in the result event of an SSE one);
    /// otherwise what came back instead.
    pub fn modern_call(&mut self, id: u64) -> Result<(), String> {
        let r = self.modern_request(id);
        let complete = result_type(&r.body) == Some(b"complete");
        if r.status == 200
            && complete
            && has_id(&r.body, id)
            && contains(&r.body, br#""text":"hi""#)
        {
            Ok(())
        } else {
            Err(format!(
                "request id {id}: {} {}",
                r.status,
                String::from_utf8_lossy(&r.body).trim()
            ))
        }
    }

    /// A 2026-07-28 request of `method` with `params` (JSON text) and the
    /// tasks extension in its client capabilities; `name` goes in
    /// `Mcp-Name`.
    fn tasks_request(&mut self, id: u64, method: &str, name: &str, params: &str) -> Response {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"extensions":{{"io.modelcontextprotocol/tasks":{{}}}}}}}}}}}}"#
        );
        let headers = format!(
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nMcp-Name: {name}\r\n"
        );
        let path = self.path.clone();
        self.send_with("POST", &path, None, &headers, &body)
    }

    /// `tools/call` of `work` lasting `seconds`, as a task (`--tasks`): the
    /// new task's id; `Err` unless the answer is 200 with `resultType`
    /// `"task"`, a `taskId` and the request's id.
    pub fn task_create(&mut self, id: u64, seconds: u64) -> Result<String, String> {
        let params = format!(r#""name":"work","arguments":{{"seconds":{seconds}}}"#);
        let r = self.tasks_request(id, "tools/call", "work", &params);
        let task = string_member(&r.body, "taskId");
        match (r.status, result_type(&r.body), task) {
            (200, Some(b"task"), Some(task)) if has_id(&r.body, id) => Ok(task),
            (status, ..) => Err(format!(
                "tools/call as a task: {status} {}",
                String::from_utf8_lossy(&r.body).trim()
            )),
        }
    }

    /// `tasks/get` of `task` (`--tasks`): `Ok` if the answer is 200 with
    /// the task's id, status `"working"` and the request's id.
    pub fn task_get(&mut self, id: u64, task: &str) -> Result<(), String> {
        let params = format!(r#""taskId":"{task}""#);
        let r = self.tasks_request(id, "tasks/get", task, &params);
        if r.status == 200
            && has_id(&r.body, id)
            && string_member(&r.body, "taskId").as_deref() == Some(task)
            && string_member(&r.body, "status").as_deref() == Some("working")
        {
            Ok(())
        } else {
            Err(format!(
                "tasks/get {task}: {} {}",
                r.status,
                String::from_utf8_lossy(&r.body).trim()
            ))
        }
    }

    /// The answer to [`Client::modern_request`] as text, for the record:
    /// status, content type, body.
    pub fn modern_answer(&mut self, id: u64) -> String {
        let r = self.modern_request(id);
        format!(
            "{} {}: {}",
            r.status,
            r.content_type.as_deref().unwrap_or("(no content type)"),
            String::from_utf8_lossy(&r.body).trim()
        )
    }

    /// `GET /metrics`, as text.
    pub fn metrics(&mut self) -> String {
        let r = self.send("GET", "/metrics", None, "");
        String::from_utf8_lossy(&r.body).into_owned()
    }
}

/// Reads one response; returns it and whether the connection stays open.
fn read_response(conn: &mut BufReader<TcpStream>) -> std::io::Result<(Response, bool)> {
    let mut line = String::new();
    if conn.read_line(&mut line)? == 0 {
        return Err(std::io::Error::other("closed before the status line"));
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let (mut length, mut chunked, mut keep) = (None, false, true);
    let (mut session_id, mut content_type) = (None, None);
    loop {
        line.clear();
        conn.read_line(&mut line)?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse::<usize>().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            keep = !value.eq_ignore_ascii_case("close");
        } else if name.eq_ignore_ascii_case("mcp-session-id") {
            session_id = Some(value.to_string());
        } else if name.eq_ignore_ascii_case("content-type") {
            content_type = Some(value.to_string());
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            conn.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| std::io::Error::other(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    line.clear();
                    conn.read_line(&mut line)?;
                    if line.trim_end().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            conn.read_exact(&mut body[start..])?;
            line.clear();
            conn.read_line(&mut line)?;
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        conn.read_exact(&mut body)?;
    } else if status != 204 && status != 304 && !(100..200).contains(&status) {
        conn.read_to_end(&mut body)?;
        keep = false;
    }
    Ok((
        Response {
            status,
            session_id,
            content_type,
            body,
        },
        keep,
    ))
}

/// The value of the first `"resultType"` member in `body` (a JSON answer,
/// or the events of an SSE one), without parsing the rest: the string
/// between the quotes after the colon.
fn result_type(body: &[u8]) -> Option<&[u8]> {
    const KEY: &[u8] = b"\"resultType\"";
    let at = body.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = &body[at..];
    let rest = &rest[rest.iter().position(|b| !b.is_ascii_whitespace())?..];
    let rest = rest.strip_prefix(b":")?;
    let rest = &rest[rest.iter().position(|b| !b.is_ascii_whitespace())?..];
    let rest = rest.strip_prefix(b"\"")?;
    Some(&rest[..rest.iter().position(|&b| b == b'"')?])
}

/// The first string member `name` in `body` (`"name":"value"`, optional
/// whitespace after the colon), without parsing the rest.
fn string_member(body: &[u8], name: &str) -> Option<String> {
    let key = format!("\"{name}\":");
    let at = body.windows(key.len()).position(|w| w == key.as_bytes())? + key.len();
    let rest = &body[at..];
    let rest = &rest[rest.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
    let rest = rest.strip_prefix(b"\"")?;
    let end = rest.iter().position(|&b| b == b'"')?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// Whether `needle` occurs in `body`.
fn contains(body: &[u8], needle: &[u8]) -> bool {
    body.windows(needle.len()).any(|w| w == needle)
}

/// Whether `body` carries the JSON-RPC id `id`: `"id":<id>` (optional
/// whitespace after the colon) not followed by another digit.
fn has_id(body: &[u8], id: u64) -> bool {
    const KEY: &[u8] = b"\"id\":";
    let digits = id.to_string();
    let mut at = 0;
    while let Some(found) = body[at..].windows(KEY.len()).position(|w| w == KEY) {
        let rest = &body[at + found + KEY.len()..];
        let rest = &rest[rest.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
        if rest.starts_with(digits.as_bytes())
            && !rest.get(digits.len()).is_some_and(|b| b.is_ascii_digit())
        {
            return true;
        }
        at += found + KEY.len();
    }
    false
}

/// The value of the unlabelled sample `name` in Prometheus text.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}
