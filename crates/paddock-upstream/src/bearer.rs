//! paddock's bearer token for the upstream, re-read from its file as it rotates.
//!
//! In a pod, the upstream kubeconfig's `tokenFile` is the projected service-account token,
//! which the kubelet replaces before it expires (at 80 % of its life, or daily). A token read
//! once at start would fail every request with 401 once it expires (after an hour where the
//! apiserver does not extend token lifetimes). client-go re-reads the file when its copy is a
//! minute old; so does this. A file that cannot be read, or is empty, keeps the last good token
//! (and says so in the log): the old token may still be valid, and a 401 follows if not.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use http::HeaderValue;
use parking_lot::Mutex;

use crate::error::ServerError;

/// How old the copy of a token file may be before it is read again (client-go's figure).
pub const TOKEN_FILE_REREAD: Duration = Duration::from_secs(60);

/// The `Authorization` value for the upstream: fixed, or from a file re-read every minute.
pub struct Bearer {
    file: Option<PathBuf>,
    /// The header value and when its file was read.
    current: Mutex<(HeaderValue, Instant)>,
}

impl Bearer {
    /// A token given inline (or read once from `file`, which is then re-read as it rotates).
    pub fn new(token: &str, file: Option<PathBuf>) -> Result<Self, ServerError> {
        Ok(Bearer {
            file,
            current: Mutex::new((header(token)?, Instant::now())),
        })
    }

    /// The header value to send now.
    pub fn value(&self) -> HeaderValue {
        self.value_at(Instant::now())
    }

    /// The header value at `now`: the file read again first if its copy is older than
    /// [`TOKEN_FILE_REREAD`].
    pub fn value_at(&self, now: Instant) -> HeaderValue {
        let mut current = self.current.lock();
        if let Some(file) = &self.file
            && now.saturating_duration_since(current.1) >= TOKEN_FILE_REREAD
        {
            // Read once a minute at most, by whichever request comes first; the file is a
            // few hundred bytes on a local (tmpfs) volume.
            current.1 = now;
            let read = std::fs::read_to_string(file)
                .map_err(|e| e.to_string())
                .and_then(|t| match t.trim() {
                    "" => Err("the file is empty".to_owned()),
                    t => header(t).map_err(|e| e.to_string()),
                });
            match read {
                Ok(v) => current.0 = v,
                Err(e) => {
                    tracing::warn!(file = %file.display(), error = %e, "upstream token file not readable; keeping the token read before")
                }
            }
        }
        current.0.clone()
    }
}

fn header(token: &str) -> Result<HeaderValue, ServerError> {
    let mut v = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| ServerError::Config("upstream token has invalid characters".into()))?;
    v.set_sensitive(true);
    Ok(v)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_token_file_is_read_again_once_its_copy_is_a_minute_old() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "first\n").unwrap();
        let b = Bearer::new("first", Some(file.clone())).unwrap();
        let t0 = Instant::now();
        std::fs::write(&file, "second\n").unwrap();
        // Within the minute: the copy stands.
        assert_eq!(b.value_at(t0 + Duration::from_secs(59)), "Bearer first");
        assert_eq!(b.value_at(t0 + TOKEN_FILE_REREAD), "Bearer second");
        // A file gone or empty keeps the last good token.
        std::fs::write(&file, "  \n").unwrap();
        assert_eq!(b.value_at(t0 + 2 * TOKEN_FILE_REREAD), "Bearer second");
        std::fs::remove_file(&file).unwrap();
        assert_eq!(b.value_at(t0 + 3 * TOKEN_FILE_REREAD), "Bearer second");
        std::fs::write(&file, "third").unwrap();
        assert_eq!(b.value_at(t0 + 4 * TOKEN_FILE_REREAD), "Bearer third");
        assert!(b.value().is_sensitive());
    }

    #[test]
    fn an_inline_token_is_never_reread() {
        let b = Bearer::new("inline", None).unwrap();
        let later = Instant::now() + 10 * TOKEN_FILE_REREAD;
        assert_eq!(b.value_at(later), "Bearer inline");
        assert!(Bearer::new("bad\ntoken", None).is_err());
    }
}
