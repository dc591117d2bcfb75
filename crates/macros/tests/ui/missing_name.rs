#[floodgate::resource(entry_type = In)]
fn handler() -> Result<(), floodgate::BlockError> {
    Ok(())
}

fn main() {}
