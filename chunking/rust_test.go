package chunking

import (
	"slices"
	"strings"
	"testing"
)

var rustSrc = strings.TrimPrefix(`
//! A small library.
use std::fmt;

/// A point in space.
#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

impl Point {
    /// Creates a point.
    pub fn new(x: f64, y: f64) -> Self {
        Point { x, y }
    }

    pub async fn fetch(&self) -> f64 {
        self.x
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

pub trait Shape {
    fn area(&self) -> f64;

    fn describe(&self) -> String {
        format!("area {}", self.area())
    }
}

pub enum Kind {
    A,
    B,
}

fn helper() -> i32 {
    42
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_works() {
        assert_eq!(helper(), 42);
    }
}
`, "\n")

func TestRustDefinitions(t *testing.T) {
	chunks := mustChunk(t, "src/lib.rs", rustSrc)
	wantOrder := []string{
		"module lib.rs",
		"type Point",
		"type impl Point",
		"method Point.new",
		"method Point.fetch",
		"type impl fmt::Display for Point",
		"method Point.fmt",
		"type Shape",
		"method Shape.describe",
		"type Kind",
		"function helper",
		"module tests",
		"function tests.it_works",
	}
	if got := names(chunks); !slices.Equal(got, wantOrder) {
		t.Fatalf("chunks:\n%s\nwant %q", dump(chunks), wantOrder)
	}
	expect(t, chunks, []want{
		{typ: TypeType, name: "Point", start: 4, end: 9, tags: []string{"rust", "decorated", "exported"}},
		{typ: TypeType, name: "impl Point", start: 11, end: 20},
		{typ: TypeMethod, name: "Point.new", start: 12, end: 15, tags: []string{"exported"}},
		{typ: TypeMethod, name: "Point.fetch", start: 17, end: 19, tags: []string{"async"}},
		{typ: TypeMethod, name: "Point.fmt", start: 23, end: 25, notTags: []string{"exported"}},
		{typ: TypeMethod, name: "Shape.describe", start: 31, end: 33},
		{typ: TypeFunction, name: "helper", start: 41, end: 43, notTags: []string{"test"}},
		{typ: TypeModule, name: "tests", start: 45, end: 53, tags: []string{"test"}},
		{typ: TypeFunction, name: "tests.it_works", start: 49, end: 52, tags: []string{"test", "decorated"}},
	})
	shape, _ := find(chunks, TypeType, "Shape")
	if !strings.Contains(shape.Content, "fn area(&self) -> f64;") || strings.Contains(shape.Content, "format!") {
		t.Errorf("trait chunk:\n%s", shape.Content)
	}
}
