//! The fast conformance subset of the default suite: `tests/testbed/conformance.sh --fast`, i.e.
//! a handful of quick [sig-api-machinery] [Conformance] tests run directly against the apiserver
//! and through paddock as a tenant. Fails if one passes directly but not through paddock.
//! The whole set (67 tests, ~8 min a run) is `make conformance`.

use std::process::Command;
use std::time::Duration;

use anyhow::{Result, bail};
use paddock_e2e::process::{self, indent, tail_lines};
use paddock_e2e::testbed::{testbed_scripts, workspace_root};

#[test]
fn conformance_fast_subset() -> Result<()> {
    let report = workspace_root().join("target/conformance/fast.md");
    let mut cmd = Command::new("bash");
    cmd.arg(testbed_scripts().join("conformance.sh"))
        .arg("--fast")
        .arg("--report")
        .arg(&report);
    // Bounded: the e2e binary may need building (~2-10 min), then two runs of ~1-3 min.
    let out = process::run(&mut cmd, None, Duration::from_secs(40 * 60))?;
    eprintln!("{}", indent(&tail_lines(&out.stderr, 15), "  "));
    eprintln!("{}", out.stdout);
    if !out.success() {
        bail!(
            "conformance.sh --fast failed (exit {:?}{}); report: {}",
            out.code,
            if out.timed_out { ", timed out" } else { "" },
            report.display()
        );
    }
    Ok(())
}
