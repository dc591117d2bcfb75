#[floodgate::resource(name = "orders", blockHandler = on_block)]
fn orders() -> Result<(), floodgate::BlockError> {
    Ok(())
}

#[floodgate::resource(name = "items", entry_type = Inbound)]
fn items() -> Result<(), floodgate::BlockError> {
    Ok(())
}

fn main() {}
