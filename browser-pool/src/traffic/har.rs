//! Recordings as HAR 1.2 files, the format browsers' developer tools and Playwright
//! (`record_har_path`, `route_from_har`) write: exchanges out as entries with their bodies
//! embedded (text as is, anything else in base64), and entries in from any HAR 1.2 file
//! whose bodies are embedded (Playwright's default `embed` content; its `attach` mode,
//! bodies in side files, is refused by name).

use base64::Engine as _;
use serde_json::{Value, json};

use super::Exchange;

/// Why a HAR file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HarError {
    /// Not the shape of a HAR file.
    #[error("not a HAR file: {0}")]
    Shape(String),
    /// An entry that cannot be replayed.
    #[error("log.entries[{index}].{field}: {message}")]
    Entry {
        /// The entry's index.
        index: usize,
        /// The field at fault.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
}

fn is_text(mime: &str) -> bool {
    let m = mime.to_ascii_lowercase();
    m.starts_with("text/")
        || [
            "json",
            "javascript",
            "xml",
            "svg",
            "html",
            "css",
            "x-www-form-urlencoded",
        ]
        .iter()
        .any(|k| m.contains(k))
}

/// `exchanges` as a HAR 1.2 log.
pub fn to_har(exchanges: &[Exchange], creator: &str) -> Value {
    let entries: Vec<Value> = exchanges
        .iter()
        .map(|e| {
            let mime = e.header("content-type").unwrap_or("").to_string();
            let text = std::str::from_utf8(&e.body).ok().filter(|_| is_text(&mime));
            let content = match text {
                Some(t) => json!({"size": e.body.len(), "mimeType": mime, "text": t}),
                None => json!({"size": e.body.len(), "mimeType": mime, "encoding": "base64",
                    "text": base64::engine::general_purpose::STANDARD.encode(&e.body)}),
            };
            let headers: Vec<Value> = e
                .headers
                .iter()
                .map(|(k, v)| json!({"name": k, "value": v}))
                .collect();
            let mut request = json!({"method": e.method, "url": e.url, "httpVersion": "HTTP/1.1",
                "cookies": [], "headers": [], "queryString": [], "headersSize": -1,
                "bodySize": e.request_body.as_ref().map_or(0, |b| b.len())});
            if let Some(b) = &e.request_body {
                request["postData"] = json!({"mimeType": "", "text": b});
            }
            json!({
                "startedDateTime": "1970-01-01T00:00:00.000Z",
                "time": 0,
                "request": request,
                "response": {"status": e.status, "statusText": e.status_text,
                    "httpVersion": "HTTP/1.1", "cookies": [], "headers": headers,
                    "content": content, "redirectURL": e.header("location").unwrap_or(""),
                    "headersSize": -1, "bodySize": e.body.len()},
                "cache": {},
                "timings": {"send": 0, "wait": 0, "receive": 0}
            })
        })
        .collect();
    json!({"log": {"version": "1.2", "creator": {"name": creator, "version": env!("CARGO_PKG_VERSION")},
        "pages": [], "entries": entries}})
}

/// The exchanges of a HAR 1.2 log, in its order.
pub fn from_har(har: &Value) -> Result<Vec<Exchange>, HarError> {
    let entries = har
        .pointer("/log/entries")
        .and_then(Value::as_array)
        .ok_or_else(|| HarError::Shape("log.entries must be an array".into()))?;
    entries
        .iter()
        .enumerate()
        .map(|(index, e)| entry(index, e))
        .collect()
}

fn entry(index: usize, e: &Value) -> Result<Exchange, HarError> {
    let bad = |field: &'static str, message: &str| HarError::Entry {
        index,
        field,
        message: message.into(),
    };
    let str_at = |p: &str| e.pointer(p).and_then(Value::as_str);
    let method = str_at("/request/method").ok_or_else(|| bad("request.method", "missing"))?;
    let url = str_at("/request/url").ok_or_else(|| bad("request.url", "missing"))?;
    if url::Url::parse(url).is_err() {
        return Err(bad("request.url", "not an absolute URL"));
    }
    let status = e
        .pointer("/response/status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .filter(|s| (100..=599).contains(s))
        .ok_or_else(|| bad("response.status", "must be an HTTP status, 100 to 599"))?;
    let headers = e
        .pointer("/response/headers")
        .and_then(Value::as_array)
        .map(|hs| {
            hs.iter()
                .filter_map(|h| {
                    Some((
                        h["name"].as_str()?.to_string(),
                        h["value"].as_str()?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let content = e.pointer("/response/content");
    if content.and_then(|c| c.get("_file")).is_some() {
        return Err(bad(
            "response.content._file",
            "bodies in side files (Playwright's `attach` content) are not read; record with content embedded",
        ));
    }
    let text = content.and_then(|c| c["text"].as_str()).unwrap_or("");
    let body = match content.and_then(|c| c["encoding"].as_str()) {
        Some("base64") => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|_| bad("response.content.text", "is not base64"))?,
        Some(other) => {
            return Err(bad(
                "response.content.encoding",
                &format!("only base64 is known, not {other:?}"),
            ));
        }
        None => text.as_bytes().to_vec(),
    };
    Ok(Exchange {
        method: method.to_string(),
        url: url.to_string(),
        request_body: str_at("/request/postData/text").map(str::to_string),
        status,
        status_text: str_at("/response/statusText").unwrap_or("").to_string(),
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exchanges_survive_a_round_trip_text_and_binary() {
        let ex = vec![
            Exchange {
                method: "GET".into(),
                url: "http://a.test/".into(),
                request_body: None,
                status: 200,
                status_text: "OK".into(),
                headers: vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
                body: b"<p>hi</p>".to_vec(),
            },
            Exchange {
                method: "POST".into(),
                url: "http://a.test/img".into(),
                request_body: Some("q=1".into()),
                status: 201,
                status_text: String::new(),
                headers: vec![("content-type".into(), "image/png".into())],
                body: vec![0x89, b'P', b'N', b'G', 0, 255],
            },
        ];
        let har = to_har(&ex, "surfgym");
        assert_eq!(har["log"]["version"], "1.2");
        assert_eq!(
            har["log"]["entries"][0]["response"]["content"]["text"],
            "<p>hi</p>"
        );
        assert_eq!(
            har["log"]["entries"][1]["response"]["content"]["encoding"],
            "base64"
        );
        assert_eq!(from_har(&har).unwrap(), ex);
    }

    #[test]
    fn bad_entries_name_their_field() {
        let one = |entry: Value| {
            from_har(&json!({"log": {"entries": [entry]}}))
                .unwrap_err()
                .to_string()
        };
        let ok = json!({"request": {"method": "GET", "url": "http://a.test/"},
            "response": {"status": 200, "content": {"text": "x"}}});
        assert!(from_har(&json!({"log": {"entries": [ok.clone()]}})).is_ok());
        let mut e = ok.clone();
        e["request"]["url"] = json!("/relative");
        assert!(one(e).contains("log.entries[0].request.url"));
        let mut e = ok.clone();
        e["response"]["status"] = json!(0);
        assert!(one(e).contains("response.status"));
        let mut e = ok.clone();
        e["response"]["content"] = json!({"_file": "abc.html"});
        assert!(one(e).contains("_file"));
        let mut e = ok;
        e["response"]["content"] = json!({"text": "%%", "encoding": "base64"});
        assert!(one(e).contains("not base64"));
        assert!(
            from_har(&json!({"entries": []}))
                .unwrap_err()
                .to_string()
                .contains("log.entries")
        );
    }
}
