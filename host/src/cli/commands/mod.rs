//! One module per subcommand.

pub mod call;
pub mod inspect;
pub mod list;
pub mod policy;
