// `floodgate` is a dev-dependency of this crate without its `tokio` feature.

#[floodgate::resource(name = "fetch")]
async fn fetch() -> Result<u32, floodgate::BlockError> {
    Ok(1)
}

fn main() {}
