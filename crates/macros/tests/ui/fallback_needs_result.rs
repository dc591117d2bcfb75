fn on_block(_block: floodgate::BlockError) -> u32 {
    0
}

fn fallback(_error: String) -> u32 {
    0
}

#[floodgate::resource(name = "size", block_handler = on_block, fallback = fallback)]
fn size() -> u32 {
    1
}

fn main() {}
