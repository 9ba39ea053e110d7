use super::*;

fn manifest(files: &[Vec<u8>]) -> Manifest {
    Manifest {
        format: FORMAT.into(),
        source_tenant: "foofoo".into(),
        created: "2026-11-30T07:00:00Z".into(),
        secrets: false,
        volume_data: "not included".into(),
        objects: files.len(),
        entries: files
            .iter()
            .enumerate()
            .map(|(i, f)| Entry {
                file: file_name(i + 1, "ConfigMap"),
                sha256: sha256_hex(f),
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("default".into()),
                name: format!("c{i}"),
                secret: false,
            })
            .collect(),
    }
}

fn sample() -> (Manifest, Vec<Vec<u8>>, Vec<u8>) {
    // One file of exactly a block, one of a block and a byte, one empty: padding both ways.
    let files = vec![vec![b'a'; 512], vec![b'b'; 513], Vec::new()];
    let m = manifest(&files);
    let tar = write(&m, &files).unwrap();
    (m, files, tar)
}

#[test]
fn an_archive_reads_back_as_written() {
    let (m, files, tar) = sample();
    assert_eq!(tar.len() % 512, 0);
    let a = read(&tar).unwrap();
    assert_eq!(a.manifest, m);
    assert_eq!(a.files, files);
    assert_eq!(a.manifest.entries[0].file, "objects/00001-configmap.yaml");
}

#[test]
fn a_truncated_archive_is_refused_at_every_length() {
    let (_, _, tar) = sample();
    // Every cut: inside a header, inside a file, inside the padding, before the end marker.
    for cut in (0..tar.len()).step_by(97) {
        let e = read(&tar[..cut]).unwrap_err();
        assert!(
            matches!(
                e,
                PortableError::Truncated(_) | PortableError::Damaged(_) | PortableError::Foreign(_)
            ),
            "{cut}: {e}"
        );
    }
    // The end marker cut off: the last entry is whole, and still refused.
    let e = read(&tar[..tar.len() - 1024]).unwrap_err();
    assert!(matches!(e, PortableError::Truncated(_)), "{e}");
}

#[test]
fn a_changed_byte_is_found() {
    let (_, _, tar) = sample();
    let a = read(&tar).unwrap();
    // In an object file: its sha256 differs from the manifest's.
    let manifest_blocks = 512
        + serde_json::to_vec_pretty(&a.manifest)
            .unwrap()
            .len()
            .div_ceil(512)
            * 512;
    let mut bad = tar.clone();
    bad[manifest_blocks + 512 + 10] ^= 1;
    let e = read(&bad).unwrap_err();
    assert!(e.to_string().contains("sha256"), "{e}");
    // In a header: its checksum.
    let mut bad = tar.clone();
    bad[manifest_blocks + 3] ^= 1;
    let e = read(&bad).unwrap_err();
    assert!(e.to_string().contains("checksum"), "{e}");
    // In the manifest itself: not JSON any more, or a value that no longer matches.
    let mut bad = tar.clone();
    bad[512] = b'x';
    assert!(matches!(read(&bad).unwrap_err(), PortableError::Damaged(_)));
}

#[test]
fn foreign_archives_are_refused() {
    assert!(matches!(
        read(b"not a tar at all").unwrap_err(),
        PortableError::Truncated(_)
    ));
    let junk = vec![7u8; 4096];
    assert!(matches!(
        read(&junk).unwrap_err(),
        PortableError::Foreign(_)
    ));
    assert!(matches!(
        read(&[0u8; 1024]).unwrap_err(),
        PortableError::Foreign(_)
    ));
    // A tar of other files.
    let mut other = Vec::new();
    append(&mut other, "etc/passwd", b"root:x:0:0").unwrap();
    other.resize(other.len() + 1024, 0);
    let e = read(&other).unwrap_err();
    assert!(matches!(e, PortableError::Foreign(_)), "{e}");
    // Another format version.
    let (mut m, files, _) = sample();
    m.format = "paddock.io/tenant-export/v9".into();
    let e = read(&write(&m, &files).unwrap()).unwrap_err();
    assert!(e.to_string().contains("v9"), "{e}");
}

#[test]
fn a_manifest_that_does_not_match_its_files_is_refused() {
    let (mut m, files, _) = sample();
    m.objects = 2;
    assert!(matches!(
        read(&write(&m, &files).unwrap()).unwrap_err(),
        PortableError::Damaged(_)
    ));
    let (m, mut files, _) = sample();
    files[1].push(b'!');
    let e = read(&write(&m, &files).unwrap()).unwrap_err();
    assert!(e.to_string().contains("sha256"), "{e}");
}
