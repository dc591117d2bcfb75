#[derive(Debug)]
struct AppError;

#[floodgate::resource(name = "load")]
fn load() -> Result<u32, AppError> {
    Err(AppError)
}

fn main() {}
