//! Names the commit the agent is built from (`JFRNATIVE_COMMIT`, for the Java API's
//! `version()`): the tools' build script, which their `--version` uses. And links the agent
//! `-z nodelete`: a library the Java API loaded (`System.load`) belongs to a class loader, and
//! HotSpot `dlclose`s it when that loader is collected (an application undeployed); the signal
//! handler, the fault hook and the JVMTI callbacks would then point at unmapped code.

#[path = "../tools/build.rs"]
mod commit;

fn main() {
    commit::main();
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
}
