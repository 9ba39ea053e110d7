//! Tests of `serve`'s settings: flags, environment and the TOML file.

use super::*;

#[test]
fn unknown_key_is_named() {
    let dir = tempfile_dir();
    let p = dir.join("bad.toml");
    std::fs::write(&p, "listen = \"127.0.0.1:1\"\nlisten_adress = \"x\"\n").ok();
    let args = ServeArgs {
        config: Some(p),
        ..Default::default()
    };
    let err = match resolve(&args) {
        Ok(_) => String::new(),
        Err(e) => format!("{e:#}"),
    };
    std::fs::remove_dir_all(&dir).ok();
    assert!(err.contains("listen_adress"), "{err}");
}

#[test]
fn example_config_has_only_known_keys() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/paddock.toml");
    let file = load_file(&p).map_err(|e| format!("{e:#}"));
    let Ok(file) = file else {
        panic!("config/paddock.toml: {file:?}", file = file.err());
    };
    assert_eq!(file.prune_grace.as_deref(), Some("7d"));
}

#[test]
fn admission_and_default_policy_from_the_file() {
    let text = "admission_listen = \"127.0.0.1:0\"\ncluster_domain = \"corp.local\"\n[default_policy]\nservices = { allowNodePort = true }\nscheduling = { nodeSelector = { pool = \"shared\" } }\n";
    let file: FileConfig = toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
    let policy = file.default_policy.unwrap_or_default();
    assert!(policy.services.allow_node_port);
    assert_eq!(
        policy
            .scheduling
            .node_selector
            .get("pool")
            .map(String::as_str),
        Some("shared")
    );
    assert_eq!(file.cluster_domain.as_deref(), Some("corp.local"));
    let bad = "[default_policy]\nservices = { allowNodeport = true }\n";
    assert!(toml::from_str::<FileConfig>(bad).is_err());
}

#[test]
fn serve_threads_one_per_cpu_by_default_and_from_the_file() {
    let file: FileConfig = toml::from_str("serve_threads = 3\n").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.serve_threads, Some(3));
    assert_eq!(FileConfig::default().serve_threads, None);
    assert_eq!(ServeArgs::default().serve_threads, None);
    // Unset: one per CPU (at least one); an explicit 0 turns per-core serving off.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(
        default_serve_threads(),
        cpus.min(paddock_upstream::serving::MAX_SERVING_THREADS)
    );
    assert!(default_serve_threads() >= 1);
}

#[test]
fn etcd_password_from_file_without_newline() {
    // its own file: the other test removes tempfile_dir() when it is done
    let p = std::env::temp_dir().join(format!("paddock-pw-test-{}", std::process::id()));
    std::fs::write(&p, "s3cret\n").ok();
    let pw = etcd_password(Some(p.clone())).ok().flatten();
    std::fs::remove_file(&p).ok();
    assert_eq!(pw, Some(Secret("s3cret".into())));
    assert_eq!(format!("{:?}", Secret("x".into())), "<redacted>");
}

fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("paddock-serve-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).ok();
    d
}
