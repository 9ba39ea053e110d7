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
    let file: ServeArgs = toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
    let policy_text = file.default_policy.clone().unwrap_or_default();
    let policy = paddock_core::admission::TenantPolicy::from_json(
        &serde_json::from_str(&policy_text).unwrap_or_default(),
    )
    .unwrap_or_default();
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
    let bad: ServeArgs = toml::from_str(bad).unwrap_or_else(|e| panic!("{e}"));
    let bad = serde_json::from_str(&bad.default_policy.unwrap_or_default()).unwrap_or_default();
    assert!(paddock_core::admission::TenantPolicy::from_json(&bad).is_err());
}

#[test]
fn serve_threads_one_per_cpu_by_default_and_from_the_file() {
    let file: ServeArgs = toml::from_str("serve_threads = 3\n").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(file.serve_threads, Some(3));
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

#[test]
fn flags_beat_the_file_and_the_files_paths_are_relative_to_it() {
    let dir = std::env::temp_dir().join(format!("paddock-merge-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok();
    let p = dir.join("paddock.toml");
    let text = "listen = \"127.0.0.1:9999\"\nstore = \"etcd\"\ncerts_dir = \"pki\"\n\
                etcd_ca_file = \"/abs/ca.crt\"\ntenant_read_qps = 7\n\
                [tenant_default_quota]\nnamespaces = \"3\"\npods = \"10\"\n";
    std::fs::write(&p, text).ok();
    let args = ServeArgs {
        config: Some(p),
        listen: Some("127.0.0.1:1".into()),
        tenant_read_qps: None,
        ..Default::default()
    };
    let m = merged(&args);
    std::fs::remove_dir_all(&dir).ok();
    let m = m.unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(m.listen.as_deref(), Some("127.0.0.1:1"), "the flag wins");
    assert_eq!(
        m.store.as_deref(),
        Some("etcd"),
        "the file fills what no flag set"
    );
    assert_eq!(m.tenant_read_qps, Some(7));
    assert_eq!(m.certs_dir, Some(dir.join("pki")), "relative to the file");
    assert_eq!(m.etcd_ca_file, Some(PathBuf::from("/abs/ca.crt")));
    assert_eq!(
        m.tenant_default_quota.as_deref(),
        Some("namespaces=3,pods=10")
    );
    assert_eq!(m.default_policy, None, "unset stays unset");
}

#[test]
fn a_file_without_the_table_settings_resolves() {
    let dir = std::env::temp_dir().join(format!("paddock-plain-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok();
    let p = dir.join("paddock.toml");
    std::fs::write(
        &p,
        "listen = \"127.0.0.1:1\"\nupstream_kubeconfig = \"up.kubeconfig\"\n",
    )
    .ok();
    let args = ServeArgs {
        config: Some(p),
        ..Default::default()
    };
    let m = merged(&args);
    let err = resolve(&args)
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    std::fs::remove_dir_all(&dir).ok();
    let m = m.unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(m.upstream_kubeconfig, Some(dir.join("up.kubeconfig")));
    assert_eq!((m.default_policy, m.tenant_default_quota), (None, None));
    // As far as the first file that is not there: the settings themselves were accepted.
    assert!(err.contains("does not exist"), "{err}");
}

#[test]
fn every_flag_is_a_file_key_but_the_file_itself_and_worker_threads() {
    use clap::Args as _;
    let cmd = ServeArgs::augment_args(clap::Command::new("serve"));
    let keys: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .filter(|k| k != "config" && k != "worker_threads")
        .collect();
    assert!(keys.len() > 50, "{keys:?}");
    for k in keys {
        let text = format!("{k} = \"x\"\n");
        let err = toml::from_str::<ServeArgs>(&text)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(!err.contains("unknown field"), "{k}: {err}");
    }
    assert!(toml::from_str::<ServeArgs>("worker_threads = 2\n").is_err());
}

#[test]
fn every_setting_is_in_the_docs() {
    use clap::Args as _;
    let docs = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
                .filter_map(|e| std::fs::read_to_string(e.path()).ok())
                .collect::<String>()
        })
        .unwrap_or_default();
    let cmd = ServeArgs::augment_args(clap::Command::new("serve"));
    let missing: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .filter(|k| k != "config" && !docs.contains(&format!("`{k}`")))
        .collect();
    assert!(missing.is_empty(), "settings not in docs/: {missing:?}");
}
