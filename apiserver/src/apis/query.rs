//! The URL's path and query decoded as kube-apiserver's Go `net/url` decodes them, so that every parser of a
//! request sees the same values kube's would: `%XX` escapes in the path (an encoded `/` included, which then
//! separates segments as a literal one does), and the query's `key=value` pairs with `+` as a space, where the
//! first value of a repeated key is the one read.

/// Why a request path could not be decoded (Go's `url.EscapeError`): `invalid URL escape "%zz"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathError(pub String);

fn hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Decodes `%XX` escapes (and, in a query, `+` as a space). An escape that is not two hex digits is Go's
/// `invalid URL escape` error; so are escapes that do not make UTF-8 (Go would keep the bytes, but nothing a
/// server names can hold them).
fn unescape(text: &str, plus_is_space: bool) -> Result<String, PathError> {
    if !text.contains('%') && (!plus_is_space || !text.contains('+')) {
        return Ok(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let pair = (bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex));
                let (Some(high), Some(low)) = pair else {
                    let end = (i + 3).min(bytes.len());
                    return Err(PathError(format!("invalid URL escape {:?}", String::from_utf8_lossy(&bytes[i..end]))));
                };
                out.push(high << 4 | low);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| PathError(format!("invalid URL escape in {text:?}: the decoded path is not UTF-8")))
}

/// The request path with its escapes decoded, as Go's `URL.Path`.
pub fn decode_path(path: &str) -> Result<String, PathError> {
    unescape(path, false)
}

/// The first value of `name` in `query`, as Go's `url.Values.Get` after `url.ParseQuery`: pairs with a `;` or a
/// bad escape are skipped, a key without `=` has the empty value.
pub fn first(query: &str, name: &str) -> Option<String> {
    query.split('&').filter(|pair| !pair.is_empty() && !pair.contains(';')).find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = unescape(key, true).ok()?;
        if key != name {
            return None;
        }
        unescape(value, true).ok()
    })
}

/// Every value of `name` in `query`, in order (Go's `url.Values[name]`).
pub fn all(query: &str, name: &str) -> Vec<String> {
    query.split('&').filter(|pair| !pair.is_empty() && !pair.contains(';')).filter_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (unescape(key, true).ok()? == name).then(|| unescape(value, true).ok()).flatten()
    }).collect()
}

/// True if `name` is present in `query` (with any value).
pub fn has(query: &str, name: &str) -> bool {
    first(query, name).is_some()
}

/// apimachinery's query-parameter bool (`Convert_Slice_string_To_bool`): only `0` and `false` (any case) are false;
/// any other value, the empty one included, is true.
pub fn go_query_bool(value: &str) -> bool {
    !(value == "0" || value.eq_ignore_ascii_case("false"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_decode_as_go_does() {
        let rows = [
            ("/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Adiscovery", Ok("/apis/rbac.authorization.k8s.io/v1/clusterroles/system:discovery")),
            ("/api/v1/namespaces/d%65fault", Ok("/api/v1/namespaces/default")),
            ("/api/v1/namespaces/a%2Fb", Ok("/api/v1/namespaces/a/b")),
            ("/api/v1/a+b", Ok("/api/v1/a+b")),
            ("/api/v1/%zz", Err("invalid URL escape \"%zz\"")),
            ("/api/v1/%4", Err("invalid URL escape \"%4\"")),
            ("/api/v1/%", Err("invalid URL escape \"%\"")),
        ];
        for (path, expected) in rows {
            let got = decode_path(path);
            assert_eq!(got.as_deref().map_err(|e| e.0.as_str()), expected, "{path}");
        }
        assert!(decode_path("/api/v1/%ff").is_err(), "not UTF-8");
    }

    #[test]
    fn query_values_are_go_url_values() {
        let query = "watch=1&fieldSelector=metadata.name%3Dx&labelSelector=a+in+(b)&watch=0&bad=%zz&empty&x;y=1";
        assert_eq!(first(query, "watch").as_deref(), Some("1"), "the first of repeated values");
        assert_eq!(first(query, "fieldSelector").as_deref(), Some("metadata.name=x"));
        assert_eq!(first(query, "labelSelector").as_deref(), Some("a in (b)"));
        assert_eq!(first(query, "bad"), None, "a bad escape drops the pair");
        assert_eq!(first(query, "empty").as_deref(), Some(""));
        assert_eq!(first(query, "x"), None, "a pair with ';' is dropped");
        assert!(has(query, "empty") && !has(query, "missing"));
        assert_eq!(all(query, "watch"), vec!["1".to_owned(), "0".to_owned()]);
        for (value, expected) in [("true", true), ("1", true), ("", true), ("yes", true), ("0", false), ("FALSE", false), ("False", false)] {
            assert_eq!(go_query_bool(value), expected, "{value:?}");
        }
    }
}
