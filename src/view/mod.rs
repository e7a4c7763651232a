//! Read models shared by the CLI and the review page: history rows, what `show` displays, and
//! entry ids as people write them. Imports `measure`, `task` and `record`.

pub mod entries;
pub mod history;
pub mod show;

pub use entries::{entry_arg, resolve_entry};
pub use history::{HistoryFilter, history_rows};
pub use show::{ShowData, show_data, show_json};
