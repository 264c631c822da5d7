//! One module per subcommand.

pub mod approvals;
pub mod audit;
pub mod call;
pub mod check;
pub mod console;
pub mod inspect;
pub mod install;
pub mod list;
pub mod new;
pub mod policy;
pub mod schemas;
pub mod serve;
pub mod trust;
pub mod turn;
