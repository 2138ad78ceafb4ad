//! What the module counts and shows: what is counted and where each
//! count lives (`tally`, pure, with its HTML, status page and text
//! renderings), the live counters every process shares (`counters`), and
//! what follows each answer (`answered`: the response counted, its log
//! note). What an admin sees of them is `status`.

pub(crate) mod answered;
pub(crate) mod counters;
pub(crate) mod tally;
