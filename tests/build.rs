//! Generates the pod lab's CRI v1 client from `proto/cri-api/v1.proto` with protox, a
//! protobuf compiler written in Rust, so neither `xtask` nor the tests need `protoc` on the
//! machine (a bare Debian has none before `cargo xtask setup`, which is built from here).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/cri-api/v1.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto/cri-api"])?;
    tonic_prost_build::configure()
        .build_server(false)
        .compile_fds(descriptors)?;
    Ok(())
}
