//! Names the commit the agent is built from (`JFRNATIVE_COMMIT`, for the Java API's
//! `version()`): the tools' build script, which their `--version` uses.

#[path = "../tools/build.rs"]
mod commit;

fn main() {
    commit::main();
}
