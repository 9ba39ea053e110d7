//! `paddock serve`'s in-cluster settings (docs/inside.md): where tenant pods find paddock,
//! the CA they trust, the `kubernetes` endpoints' source and the tenant DNS.

use std::net::SocketAddr;

use anyhow::{Context, Result, bail};

/// The in-cluster settings as `paddock serve` read them (flags, variables, file), unchecked.
pub(crate) struct Settings {
    pub in_cluster_host: Option<String>,
    pub in_cluster_port: Option<u16>,
    pub in_cluster_ca: Option<std::path::PathBuf>,
    /// The certificates directory (the CA's default place).
    pub certs_dir: Option<std::path::PathBuf>,
    pub in_cluster_endpoints: Option<Vec<String>>,
    pub in_cluster_service: Option<String>,
    pub tenant_dns: Option<String>,
}

/// The in-cluster path's settings (None without a host), the CA read and checked here.
pub(crate) fn in_cluster(m: &Settings) -> Result<Option<paddock_server::config::InClusterConfig>> {
    use paddock_core::admission::inside::InCluster;
    let Some(host) = m.in_cluster_host.clone() else {
        return Ok(None);
    };
    let port = m.in_cluster_port.unwrap_or(443);
    let ca_path = m.in_cluster_ca.clone().unwrap_or_else(|| {
        m.certs_dir
            .clone()
            .unwrap_or_else(|| "certs".into())
            .join("ca.crt")
    });
    let ca_pem = std::fs::read_to_string(&ca_path)
        .with_context(|| format!("in_cluster_ca: cannot read {}", ca_path.display()))?;
    if !ca_pem.contains("-----BEGIN CERTIFICATE-----") {
        bail!(
            "in_cluster_ca: {} holds no PEM certificate",
            ca_path.display()
        );
    }
    let endpoints: Vec<SocketAddr> = match &m.in_cluster_endpoints {
        Some(list) => list
            .iter()
            .map(|e| {
                e.parse()
                    .with_context(|| format!("in_cluster_endpoints: {e:?} is not ip:port"))
            })
            .collect::<Result<_>>()?,
        None => match host.parse::<std::net::IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => Vec::new(),
        },
    };
    let service = match &m.in_cluster_service {
        Some(s) => match s.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Some((ns.to_owned(), name.to_owned()))
            }
            _ => bail!("in_cluster_service: {s:?} is not <namespace>/<name>"),
        },
        None => None,
    };
    if service.is_some() && m.in_cluster_endpoints.is_some() {
        bail!("in_cluster_service and in_cluster_endpoints: give one of them");
    }
    if let Some(d) = &m.tenant_dns {
        d.parse::<std::net::IpAddr>()
            .with_context(|| format!("tenant_dns: {d:?} is not an IP address"))?;
    }
    Ok(Some(paddock_server::config::InClusterConfig {
        pods: std::sync::Arc::new(InCluster {
            host,
            port,
            ca_pem,
            dns: m.tenant_dns.clone(),
        }),
        endpoints: if service.is_some() {
            Vec::new()
        } else {
            endpoints
        },
        service,
    }))
}
