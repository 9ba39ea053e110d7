//! Which of the tenant's namespaces are a user's: one `SelfSubjectRulesReview` per namespace,
//! impersonated as the user's real identity (so the apiserver's own authorizer judges every
//! RoleBinding, aggregated ClusterRole and mirror of a tenant ClusterRoleBinding there), and
//! one in a namespace where no RoleBinding can be (the rights the user holds everywhere);
//! `paddock_core::response::views::namespace_is_users` compares them. Answers are remembered
//! for `state::views::DECISION_TTL` per user.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures_util::StreamExt;
use paddock_core::TenantId;
use paddock_core::identity::As;
use paddock_core::response::views::namespace_is_users;
use serde_json::Value;

use crate::state::AppState;
use crate::state::views::user_key;
use paddock_upstream::error::ServerError;

/// Where the user's rights everywhere are read: a valid namespace name that is no tenant's
/// (`paddock` is seven characters, a tenant id six), so no tenant RoleBinding can be there.
const NOWHERE: &str = "paddock-views-nowhere";
/// Reviews of one evaluation in flight at once.
const CONCURRENT_REVIEWS: usize = 8;

/// The upstream names among `names` that are the user's.
pub(super) async fn users_namespaces(
    state: &AppState,
    t: &TenantId,
    user: &str,
    groups: &[String],
    names: Vec<String>,
) -> Result<BTreeSet<String>, ServerError> {
    let key = user_key(t.as_str(), user, groups);
    let baseline = match state.views.baseline(&key) {
        Some(b) => b,
        None => {
            let b = Arc::new(rules_in(state, t, user, groups, NOWHERE).await?);
            state.views.put_baseline(&key, b.clone());
            b
        }
    };
    let mut mine = BTreeSet::new();
    let mut unknown = Vec::new();
    for ns in names {
        match state.views.decision(&key, &ns) {
            Some(true) => {
                mine.insert(ns);
            }
            Some(false) => {}
            None => unknown.push(ns),
        }
    }
    let asked: Vec<Result<(String, Value), ServerError>> = futures_util::stream::iter(unknown)
        .map(|ns| async move {
            let rules = rules_in(state, t, user, groups, &ns).await?;
            Ok((ns, rules))
        })
        .buffer_unordered(CONCURRENT_REVIEWS)
        .collect()
        .await;
    for a in asked {
        let (ns, rules) = a?;
        let yes = namespace_is_users(&rules, &baseline);
        state.views.put_decision(&key, &ns, yes);
        if yes {
            mine.insert(ns);
        }
    }
    Ok(mine)
}

/// The user's rules in upstream namespace `ns`. A review upstream does not answer is an
/// error: a view is never guessed.
async fn rules_in(
    state: &AppState,
    t: &TenantId,
    user: &str,
    groups: &[String],
    ns: &str,
) -> Result<Value, ServerError> {
    let review = serde_json::json!({"apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview", "spec": {"namespace": ns}});
    crate::proxy::reviews::ask_review_as(
        state,
        t,
        user,
        groups,
        As::Real,
        "selfsubjectrulesreviews",
        &review,
    )
    .await?
    .ok_or_else(|| {
        // In the tenant's names: the message reaches the client.
        let shown = t.strip(ns).unwrap_or("(everywhere)");
        ServerError::Upstream(format!(
            "the rules review of namespace {shown} for the user's view was not answered"
        ))
    })
}
