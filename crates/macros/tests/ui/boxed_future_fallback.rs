use std::future::Future;
use std::pin::Pin;

#[derive(Debug)]
struct Failed;

fn recover(_name: String, _error: Failed) -> Result<u32, Failed> {
    Ok(0)
}

// What `#[async_trait]` makes of an `async fn`: the body moves the arguments first.
#[floodgate::resource(name = "boxed", fallback = recover)]
fn boxed(name: String) -> Pin<Box<dyn Future<Output = Result<u32, Failed>> + Send>> {
    Box::pin(async move {
        let name = name;
        Ok(name.len() as u32)
    })
}

fn main() {}
