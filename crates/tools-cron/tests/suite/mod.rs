mod daemon;
mod harness;
mod tools;
