//! Why generated requests are refused (run by hand, `--ignored`, to tune the generators).

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};

use super::{ctx, parse_request, plan, request};

#[test]
#[ignore]
fn rejection_reasons() {
    let ctx = ctx();
    let mut runner = TestRunner::new(Config {
        cases: 500,
        failure_persistence: None,
        ..Config::default()
    });
    let mut reasons = std::collections::BTreeMap::<String, u32>::new();
    for _ in 0..500 {
        let r = request().new_tree(&mut runner).unwrap().current();
        let key = match parse_request(&r.method, &r.path, r.query.as_deref()) {
            Err(e) => format!(
                "parse: {}",
                e.to_string().chars().take(50).collect::<String>()
            ),
            Ok(p) => match plan(&ctx, p) {
                Err(e) => format!(
                    "plan: {}",
                    e.to_string().chars().take(50).collect::<String>()
                ),
                Ok(_) => "ok".into(),
            },
        };
        *reasons.entry(key).or_default() += 1;
    }
    let mut v: Vec<_> = reasons.into_iter().collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.1));
    for (k, n) in v.iter().take(15) {
        eprintln!("{n:4} {k}");
    }
}
