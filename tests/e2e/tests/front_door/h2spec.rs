//! h2spec over TLS against paddock's port (the `h2spec_conformance` test of front_door.rs).

use super::*;

/// h2spec tests allowed to fail: (section, description, what the failure must show, the RFC
/// clause and why). Any other failure of h2spec 2.2.1's 145 default tests (generic, RFC 7540,
/// RFC 7541) fails the test, unless it passes when its section is run again (below).
///
/// Empty: every test passes.
const H2SPEC_ALLOWED: &[(&str, &str, &str, &str)] = &[];

/// Times a failed test's section is run again on its own before the failure counts. h2spec
/// cannot present a client certificate, so paddock answers its requests 401 from the headers
/// alone, as kube-apiserver does, without reading a body; in the tests that send a malformed
/// frame right after a request's HEADERS (a second HEADERS, a DATA that does not add up to
/// content-length), the 401 sometimes leaves before the malformed frame arrives (a race on
/// loopback), and h2spec reads the answer where it waits for the reset (seen for one or two
/// such tests a run, a different one each time). A server that does not detect the
/// malformation answers every time, and fails every run.
const H2SPEC_RERUNS: usize = 5;

#[test]
fn h2spec_conformance() -> Result<()> {
    let (cp, _one) = bed()?;
    let h2spec = tools::h2spec().context("building h2spec")?;
    let p = Paddock::start_with_args(cp, StoreKind::Embedded, "paddock-h2spec", &front_args())?;
    let run = |sections: &[&str], name: &str| -> Result<(Vec<H2Case>, String)> {
        let report = p.dir().join(name);
        let mut cmd = std::process::Command::new(&h2spec);
        cmd.args(sections)
            .args(["-t", "-k", "-h", "127.0.0.1", "-p"])
            .arg(p.port().to_string())
            .args(["--timeout", "2", "-j"])
            .arg(&report);
        let out = process::run(&mut cmd, None, Duration::from_secs(300))?;
        ensure!(
            report.is_file(),
            "h2spec wrote no report (exit {:?}):\n{}\n{}",
            out.code,
            tail_lines(&out.stdout, 40),
            tail_lines(&out.stderr, 20)
        );
        Ok((
            parse_junit(&std::fs::read_to_string(&report)?),
            tail_lines(&out.stdout, 40),
        ))
    };
    let t0 = Instant::now();
    let (cases, stdout) = run(&[], "h2spec-report.xml")?;
    let took = t0.elapsed();
    let count = |s: &H2Status| cases.iter().filter(|c| &c.status == s).count();
    let failed: Vec<&H2Case> = cases
        .iter()
        .filter(|c| matches!(c.status, H2Status::Failed(_)))
        .collect();
    eprintln!(
        "h2spec against {}: {} tests, {} passed, {} skipped, {} failed, in {:.1} s",
        p.url(),
        cases.len(),
        count(&H2Status::Passed),
        count(&H2Status::Skipped),
        failed.len(),
        took.as_secs_f64()
    );
    let allowed = |c: &H2Case| {
        H2SPEC_ALLOWED.iter().find(|(sec, desc, shows, _)| {
            *sec == c.section
                && *desc == c.desc
                && matches!(&c.status, H2Status::Failed(why) if why.contains(shows))
        })
    };
    let mut unexpected = Vec::new();
    for c in &failed {
        let H2Status::Failed(why) = &c.status else {
            continue;
        };
        let line = format!("{} {}: {}", c.section, c.desc, why.replace('\n', " | "));
        if let Some((_, _, _, reason)) = allowed(c) {
            eprintln!("  allowed failure: {line} ({reason})");
            continue;
        }
        let mut passed_on = None;
        for i in 1..=H2SPEC_RERUNS {
            let (again, _) = run(&[c.section.as_str()], &format!("h2spec-rerun-{i}.xml"))?;
            if again
                .iter()
                .any(|a| a.desc == c.desc && a.status == H2Status::Passed)
            {
                passed_on = Some(i);
                break;
            }
        }
        match passed_on {
            Some(i) => eprintln!("  failed once, passed on rerun {i} of its section: {line}"),
            None => {
                eprintln!("  FAILED (and in {H2SPEC_RERUNS} reruns of its section): {line}");
                unexpected.push(line);
            }
        }
    }
    for (sec, desc, _, _) in H2SPEC_ALLOWED {
        if cases
            .iter()
            .any(|c| c.section == *sec && c.desc == *desc && c.status == H2Status::Passed)
        {
            eprintln!("  note: allowed exception {sec} {desc:?} passed in this run");
        }
    }
    let has = |prefix: &str| cases.iter().any(|c| c.section.starts_with(prefix));
    ensure!(
        cases.len() >= 140 && has("generic/") && has("http2/") && has("hpack/"),
        "h2spec ran only {} tests (the generic, http2 and hpack groups hold 145):\n{}",
        cases.len(),
        stdout
    );
    ensure!(
        unexpected.is_empty(),
        "{} h2spec test(s) failed (not in H2SPEC_ALLOWED):\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    p.stop();
    Ok(())
}

#[derive(Debug, PartialEq, Eq)]
enum H2Status {
    Passed,
    Skipped,
    Failed(String),
}

/// One test of h2spec's JUnit report: its section (`http2/6.5.3`) and description.
#[derive(Debug)]
struct H2Case {
    section: String,
    desc: String,
    status: H2Status,
}

/// The `<testcase>` elements of h2spec's JUnit report (reporter/junit_report.go: attributes
/// `package` and `classname`, a `<failure>`, `<error>` or `<skipped>` child when not passed).
fn parse_junit(xml: &str) -> Vec<H2Case> {
    let unescape = |s: &str| {
        s.replace("&#34;", "\"")
            .replace("&#39;", "'")
            .replace("&#xA;", "\n")
            .replace("&#x9;", "\t")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
    };
    let attr = |tag: &str, name: &str| -> String {
        let key = format!(" {name}=\"");
        tag.find(&key)
            .map(|i| &tag[i + key.len()..])
            .and_then(|rest| rest.find('"').map(|j| unescape(&rest[..j])))
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for chunk in xml.split("<testcase ").skip(1) {
        let Some(tag_end) = chunk.find('>') else {
            continue;
        };
        let tag = format!(" {}", &chunk[..tag_end]);
        let body = if tag.ends_with('/') {
            ""
        } else {
            chunk[tag_end + 1..]
                .split("</testcase>")
                .next()
                .unwrap_or_default()
        };
        let text = |el: &str| {
            body.split(&format!("<{el}>"))
                .nth(1)
                .and_then(|r| r.split(&format!("</{el}>")).next())
                .map(unescape)
                .unwrap_or_default()
        };
        let status = if body.contains("<failure") {
            H2Status::Failed(text("failure"))
        } else if body.contains("<error") {
            H2Status::Failed(text("error"))
        } else if body.contains("<skipped") {
            H2Status::Skipped
        } else {
            H2Status::Passed
        };
        out.push(H2Case {
            section: attr(&tag, "package"),
            desc: attr(&tag, "classname"),
            status,
        });
    }
    out
}
