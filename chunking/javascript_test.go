package chunking

import (
	"slices"
	"strings"
	"testing"
)

var tsSrc = strings.TrimPrefix(`
import { Component } from "./core";

// A widget.
@Component({ selector: "w" })
export class Widget<T> extends Base implements Drawable {
  private size: number = 1;
  @Input() label: string;

  constructor(size: number) {
    super();
    this.size = size;
  }

  /** Draws the widget. */
  @HostListener("click")
  async draw(ctx: Context): Promise<void> {
    await ctx.render(this);
    return;
  }

  get area(): number {
    return this.size * this.size;
  }

  abstract kind(): string;
}

export interface Drawable {
  draw(ctx: Context): Promise<void>;
}

export type Size = "s" | "m" | "l";

enum Color {
  Red,
  Green,
}

export const handler = async (req: Request) => {
  const body = await req.json();
  return body;
};

export default function main(): void {
  console.log(new Widget(2));
}

namespace Geometry {
  export function area(w: number, h: number): number {
    return w * h;
  }
}
`, "\n")

func TestTypeScriptDefinitions(t *testing.T) {
	chunks := mustChunk(t, "src/widget.ts", tsSrc)
	wantOrder := []string{
		"module widget.ts",
		"class Widget",
		"method Widget.constructor",
		"method Widget.draw",
		"method Widget.area",
		"type Drawable",
		"type Size",
		"type Color",
		"function handler",
		"function main",
		"module Geometry",
		"function Geometry.area",
	}
	if got := names(chunks); !slices.Equal(got, wantOrder) {
		t.Fatalf("chunks:\n%s\nwant %q", dump(chunks), wantOrder)
	}
	expect(t, chunks, []want{
		{typ: TypeClass, name: "Widget", start: 3, end: 26, tags: []string{"typescript", "decorated", "exported"}},
		{typ: TypeMethod, name: "Widget.constructor", start: 9, end: 12},
		{typ: TypeMethod, name: "Widget.draw", start: 14, end: 19, tags: []string{"async", "decorated"}},
		{typ: TypeMethod, name: "Widget.area", start: 21, end: 23},
		{typ: TypeType, name: "Drawable", start: 28, end: 30, tags: []string{"exported"}},
		{typ: TypeType, name: "Size", start: 32, end: 32},
		{typ: TypeType, name: "Color", start: 34, end: 37, notTags: []string{"exported"}},
		{typ: TypeFunction, name: "handler", start: 39, end: 42, tags: []string{"async", "exported"}},
		{typ: TypeFunction, name: "main", start: 44, end: 46, tags: []string{"exported"}},
		{typ: TypeFunction, name: "Geometry.area", start: 49, end: 51},
	})
	cls, _ := find(chunks, TypeClass, "Widget")
	for _, s := range []string{"// A widget.", "@Component", "private size: number = 1;", "@Input() label: string;",
		"async draw(ctx: Context): Promise<void> { ... }", "abstract kind(): string;"} {
		if !strings.Contains(cls.Content, s) {
			t.Errorf("class chunk lacks %q:\n%s", s, cls.Content)
		}
	}
	if strings.Contains(cls.Content, "ctx.render") {
		t.Errorf("class chunk repeats a method body:\n%s", cls.Content)
	}
}

func TestTSXAndSpecTag(t *testing.T) {
	src := "import React from 'react';\n\nexport const Button = ({ label }: Props) => {\n  return <button>{label}</button>;\n};\n\nexport function Page(): JSX.Element {\n  return (\n    <div>\n      <Button label=\"x\" />\n    </div>\n  );\n}\n"
	chunks := mustChunk(t, "ui/Button.spec.tsx", src)
	expect(t, chunks, []want{
		{typ: TypeFunction, name: "Button", start: 3, end: 5, tags: []string{"tsx", "test", "exported"}},
		{typ: TypeFunction, name: "Page", start: 7, end: 13, tags: []string{"tsx"}},
	})
}

var jsSrc = strings.TrimPrefix(`
import React from "react";

/**
 * Renders the app.
 */
export function App({ name }) {
  return <div className="app">{name}</div>;
}

class Store {
  #items = [];

  add(item) {
    this.#items.push(item);
    return this;
  }

  *[Symbol.iterator]() {
    yield* this.#items;
  }
}

const fetchAll = async function (urls) {
  return Promise.all(urls.map(fetch));
};

module.exports.helper = function helper(x) {
  return x + 1;
};
`, "\n")

func TestJavaScriptDefinitions(t *testing.T) {
	chunks := mustChunk(t, "web/app.jsx", jsSrc)
	wantOrder := []string{
		"module app.jsx",
		"function App",
		"class Store",
		"method Store.add",
		"method Store.[Symbol.iterator]",
		"function fetchAll",
		"function module.exports.helper",
	}
	if got := names(chunks); !slices.Equal(got, wantOrder) {
		t.Fatalf("chunks:\n%s\nwant %q", dump(chunks), wantOrder)
	}
	expect(t, chunks, []want{
		{typ: TypeFunction, name: "App", start: 3, end: 8, tags: []string{"javascript", "exported"}},
		{typ: TypeClass, name: "Store", start: 10, end: 21},
		{typ: TypeMethod, name: "Store.add", start: 13, end: 16},
		{typ: TypeFunction, name: "fetchAll", start: 23, end: 25, tags: []string{"async"}},
	})
	app, _ := find(chunks, TypeFunction, "App")
	if !strings.HasPrefix(app.Content, "/**\n * Renders the app.\n */\nexport function App") {
		t.Errorf("JSDoc not attached:\n%s", app.Content)
	}
}

func TestJavaScriptSyntaxError(t *testing.T) {
	src := "function ok() {\n  return 1;\n}\n\nfunction broken( {\n  if (\n}\n\nclass K {\n  m() {\n    return 2;\n  }\n}\n"
	chunks := mustChunk(t, "broken.js", src)
	if !slices.Contains(chunks[0].Tags, "parse_error") {
		t.Errorf("no parse_error tag: %v", chunks[0])
	}
	expect(t, chunks, []want{{typ: TypeFunction, name: "ok", start: 1, end: 3}})
}
