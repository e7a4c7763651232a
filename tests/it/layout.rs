//! The confirmation series is built under another code layout: a candidate whose speed comes
//! from where its code falls in the first series' builds passes that series and fails its
//! confirmation, while a real gain passes both.

use crate::common::replay::{expect, run_replay};
use crate::common::{Env, files_line};

/// The spin kernel with its wasted work (PAD_PERMILLE 200: a fifth more steps) dropped only
/// when it was built under the usual layout: it stands for code that is faster where it
/// happens to fall, and no faster anywhere else.
fn kernel(only_under_the_usual_layout: bool) -> String {
    let start = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/spin/kernel.c"),
    )
    .unwrap();
    let drop_pad = "#undef PAD_PERMILLE\n#define PAD_PERMILLE 0\n";
    let patch = if only_under_the_usual_layout {
        format!("#if BUILT_UNDER_LAYOUT == 0\n{drop_pad}#endif\n")
    } else {
        drop_pad.to_string()
    };
    start.replacen(
        "#include \"params.h\"\n",
        &format!("#include \"params.h\"\n{patch}"),
        1,
    )
}

#[test]
fn a_gain_that_comes_from_the_code_layout_is_not_confirmed_and_a_real_one_is() {
    let env = Env::new();
    let task = env.task("spin");
    let lines = [
        files_line("kernel.c", &kernel(true), "faster where its code falls"),
        files_line("kernel.c", &kernel(false), "less work everywhere"),
    ];
    let r = run_replay(&env, &task, &lines, &[]);
    expect(&r, 0, "rejected", "not confirmed in a fresh series: ");
    expect(&r, 0, "rejected", "(its first series: faster: +");
    expect(&r, 1, "accepted", "confirmed in a fresh series (faster: +");
}
