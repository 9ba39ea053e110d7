//! Where paddock's share is: direct, direct with the impersonation headers, through
//! paddock; and who impersonates (gateway.rs).

use std::fmt::Write as _;

use anyhow::Result;
use paddock_e2e::ControlPlane;

use crate::client::{Api, Cred, Proto};
use crate::load::{self, Procs, Side, Work};
use crate::setup::count_for;
use crate::stats::{ms, ratio};
use crate::{Args, Report, TENANT, gateway};

/// Where paddock's share is: the same requests sent directly by the admin, directly with the
/// Impersonate-* headers paddock sends (the apiserver's extra work for a tenant identity:
/// impersonation checks, the admission guard on writes, API Priority and Fairness), and
/// through paddock.
pub(crate) async fn imp_bench(
    args: &Args,
    admin: &Cred,
    tenant: &Cred,
    procs: Procs,
    peak_hwm: &mut u64,
    report: &mut Report,
) -> Result<()> {
    let proto = Proto::H2;
    let headers = tenant.impersonation_headers()?;
    let admin_side = Side {
        api: Api::new(admin, proto)?,
        prefix: format!("{TENANT}-"),
    };
    let imp_side = Side {
        api: Api::new(admin, proto)?.with_headers(headers),
        prefix: format!("{TENANT}-"),
    };
    let paddock_side = Side {
        api: Api::new(tenant, proto)?,
        prefix: String::new(),
    };
    let lowest = *args.concurrency.iter().min().unwrap_or(&1);
    let highest = *args.concurrency.iter().max().unwrap_or(&64);
    let d = &mut report.details;
    let _ = writeln!(
        d,
        "### Decomposition (HTTP/2): admin directly → the tenant's identity directly (admin certificate + paddock's Impersonate-* headers) → through paddock\n"
    );
    let _ = writeln!(
        d,
        "| workload | conc | p50 admin / as-tenant / paddock (ms) | as-tenant ÷ admin: p50, req/s | paddock ÷ as-tenant: p50, p99, req/s | apiserver CPU s/1k admin / as-tenant | paddock CPU s/1k |\n|---|---|---|---|---|---|---|"
    );
    let mut goal_rows = Vec::new();
    let mut levels = vec![lowest, highest];
    levels.dedup();
    for work in [Work::Get, Work::CreateDelete] {
        for &conc in &levels {
            let n = count_for(work, conc, args.quick);
            eprintln!(
                "== decomposition · {} · concurrency {conc}: admin vs as-tenant, as-tenant vs paddock",
                work.name()
            );
            let tag = format!("i{}{conc}", work as u8);
            let a = load::pairs(
                work,
                &admin_side,
                &imp_side,
                None,
                conc,
                n,
                args.reps,
                procs,
                0,
                peak_hwm,
                &format!("{tag}a"),
            )
            .await;
            let b = load::pairs(
                work,
                &imp_side,
                &paddock_side,
                None,
                conc,
                n,
                args.reps,
                procs,
                0,
                peak_hwm,
                &format!("{tag}b"),
            )
            .await;
            let _ = writeln!(
                d,
                "| {} | {conc} | {} / {} / {} | {}, {} | {}, {}, {} | {:.3} / {:.3} | {:.3} |",
                work.name(),
                ms(a.direct_p50()),
                ms(a.paddock_p50()),
                ms(b.paddock_p50()),
                ratio(a.p50_ratio()),
                ratio(a.rps_ratio()),
                ratio(b.p50_ratio()),
                ratio(b.p99_ratio()),
                ratio(b.rps_ratio()),
                a.apiserver_cpu_per_k_direct(),
                a.apiserver_cpu_per_k_paddock(),
                b.paddock_cpu_per_k(),
            );
            if work == Work::Get {
                if conc == highest {
                    report.imp_cpu = Some((
                        a.apiserver_cpu_per_k_direct(),
                        a.apiserver_cpu_per_k_paddock(),
                    ));
                }
                goal_rows.push((conc, b));
            }
        }
    }
    let _ = writeln!(d);
    for (conc, b) in goal_rows {
        if conc == lowest {
            report.goal(
                format!("(diagnostic) small GET through paddock vs the same identity directly, p50 / p99 ratio (c={conc}, h2)"),
                "–",
                format!("{} / {}", ratio(b.p50_ratio()), ratio(b.p99_ratio())),
                None,
            );
        }
        if conc == highest {
            report.goal(
                format!("(diagnostic) small GET req/s at {conc} through paddock vs the same identity directly (h2)"),
                "–",
                ratio(b.rps_ratio()),
                None,
            );
        }
    }
    Ok(())
}

/// The apiserver's cost of who impersonates (gateway.rs), at the highest concurrency.
pub(crate) async fn gateway_part(
    args: &Args,
    cp: &ControlPlane,
    admin: &Cred,
    tenant: &Cred,
    procs: Procs,
    peak_hwm: &mut u64,
    report: &mut Report,
) {
    let high = *args.concurrency.iter().max().unwrap_or(&64);
    eprintln!(
        "== who impersonates: admin vs a least-privilege identity · small GET · concurrency {high}"
    );
    let r = async {
        let gw = gateway::least_privilege(&cp.dir().join("pki"), admin, &cp.dir().join("gateway"))
            .await?;
        let h = tenant.impersonation_headers()?;
        let n = count_for(Work::Get, high, args.quick);
        gateway::bench(
            admin,
            &gw,
            &h,
            &format!("{TENANT}-"),
            high,
            n,
            args.reps,
            procs,
            peak_hwm,
        )
        .await
    }
    .await;
    match r {
        Ok((d, cpu)) => {
            report.details.push_str(&d);
            report.gateway_cpu = Some(cpu);
        }
        Err(e) => {
            eprintln!("  failed: {e:#}");
            report
                .notes
                .push(format!("least-privilege impersonation benchmark: {e:#}"));
        }
    }
}
