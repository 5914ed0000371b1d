/// Runs an `async fn(Fixture)` case on every backend: `NAME::sqlite` always, `NAME::postgres`
/// when the feature is on and `TOOLSHED_TEST_PG` names a database (required in CI).
macro_rules! on_every_backend {
    ($case:ident) => {
        on_every_backend!($case, |c| c);
    };
    ($case:ident, $tune:expr) => {
        mod $case {
            #[tokio::test]
            async fn sqlite() {
                let f = crate::suite::harness::fixture_on(
                    crate::suite::harness::Backend::Sqlite,
                    $tune,
                );
                super::$case(f).await;
            }

            #[cfg(feature = "postgres")]
            #[tokio::test]
            async fn postgres() {
                let Some(backend) = crate::suite::harness::Backend::postgres(stringify!($case))
                else {
                    return;
                };
                super::$case(crate::suite::harness::fixture_on(backend, $tune)).await;
            }
        }
    };
}

mod daemon;
mod harness;
mod tools;
