//! Who acted in a tenant (docs/security.md "Who is who"): each tenant caller is noted here at
//! the door; this replica writes the user's record (how it signed in, its groups, when it was
//! last seen) to the store the first time it sees it and then at most once a minute while it
//! acts (`crate::state::activity::Activity::user_due`). The write happens off the request's
//! path: a slow or unreachable store never delays a request, and a lost write only makes a
//! `lastSeen` older. `paddock user list` reads them with the issued certificates.

use std::sync::Arc;

use paddock_core::identity::{Caller, OIDC_SERIAL_PREFIX, SignIn};
use paddock_store::{SeenUser, now_rfc3339};

use crate::state::AppState;

/// Notes a tenant caller's request.
pub fn note(state: &Arc<AppState>, caller: &Caller) {
    let Caller::Tenant {
        tenant,
        user,
        groups,
        serial,
    } = caller
    else {
        return;
    };
    // paddock acting in the tenant itself (export, import, move) is nobody's sign-in.
    let Some(via) = SignIn::of_serial(serial) else {
        return;
    };
    let now = crate::lifecycle::unix_now();
    if !state
        .activity
        .user_due((tenant, via.as_str(), user), groups, now)
    {
        return;
    }
    let seen = SeenUser {
        tenant: tenant.as_str().to_string(),
        user: user.to_string(),
        via: via.as_str().to_string(),
        groups: groups.to_vec(),
        credential: match via {
            SignIn::Certificate => Some(format!("serial {serial}")),
            SignIn::Oidc => serial
                .strip_prefix(OIDC_SERIAL_PREFIX)
                .map(|sub| format!("sub {sub}")),
            SignIn::ServiceAccount => None,
        },
        last_seen: now_rfc3339(),
    };
    let state = state.clone();
    tokio::spawn(async move {
        if let Err(e) = state.store.note_user(&seen).await {
            tracing::debug!(tenant = %seen.tenant, user = %seen.user, error = %e, "user not noted");
        }
    });
}
