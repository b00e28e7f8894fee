//! Store locations as users write them: recognising a PostgreSQL URL and
//! showing one without its password. Plain string functions, so a build
//! without the PostgreSQL backend can still tell the user what they asked
//! for.

/// The URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.find(':') {
                Some(colon) => format!("{}{}:***{}", &url[..scheme + 3], &credentials[..colon], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// Whether a `--store` / `MEMPALACE_DATABASE_URL` value names PostgreSQL.
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(redact("postgres://me:s3cret@db:5432/memory"), "postgres://me:***@db:5432/memory");
        assert_eq!(redact("postgres://me@db/memory"), "postgres://me@db/memory");
        assert_eq!(redact("postgres://me:p@ss@db/memory"), "postgres://me:***@db/memory");
        assert!(is_postgres_url("postgresql://db/x") && is_postgres_url("postgres://db/x"));
        assert!(!is_postgres_url("/home/me/.mempalace/palace"));
    }
}
