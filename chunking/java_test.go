package chunking

import (
	"slices"
	"strings"
	"testing"
)

var javaSrc = strings.TrimPrefix(`
package com.example;

import java.util.List;

/**
 * A widget.
 */
@Entity
public class Widget<T> extends Base {
    private int size;
    private final List<T> items;

    public Widget(int size) {
        this.size = size;
        this.items = null;
    }

    @Override
    public String toString() {
        return "Widget(" + size + ")";
    }

    public abstract void draw();

    interface Listener {
        void onEvent(String e);

        default void reset() {
            System.out.println("reset");
        }
    }

    enum Color {
        RED, GREEN;

        Color next() {
            return GREEN;
        }
    }
}
`, "\n")

func TestJavaDefinitions(t *testing.T) {
	chunks := mustChunk(t, "src/main/java/com/example/Widget.java", javaSrc)
	wantOrder := []string{
		"module Widget.java",
		"class Widget",
		"method Widget.Widget",
		"method Widget.toString",
		"type Widget.Listener",
		"method Widget.Listener.reset",
		"class Widget.Color",
		"method Widget.Color.next",
	}
	if got := names(chunks); !slices.Equal(got, wantOrder) {
		t.Fatalf("chunks:\n%s\nwant %q", dump(chunks), wantOrder)
	}
	expect(t, chunks, []want{
		{typ: TypeClass, name: "Widget", start: 5, end: 40, tags: []string{"java", "decorated", "exported"}},
		{typ: TypeMethod, name: "Widget.Widget", start: 13, end: 16, tags: []string{"exported"}},
		{typ: TypeMethod, name: "Widget.toString", start: 18, end: 21, tags: []string{"decorated"}},
		{typ: TypeMethod, name: "Widget.Listener.reset", start: 28, end: 30},
		{typ: TypeMethod, name: "Widget.Color.next", start: 36, end: 38},
	})
	cls, _ := find(chunks, TypeClass, "Widget")
	for _, s := range []string{"/**\n * A widget.\n */\n@Entity\npublic class Widget<T> extends Base {",
		"private final List<T> items;", "public abstract void draw();", "public String toString() { ... }"} {
		if !strings.Contains(cls.Content, s) {
			t.Errorf("class chunk lacks %q:\n%s", s, cls.Content)
		}
	}
}

func TestJavaTestAnnotation(t *testing.T) {
	src := "class WidgetTest {\n    @Test\n    void draws() {\n        assertTrue(true);\n    }\n}\n"
	chunks := mustChunk(t, "src/test/java/WidgetTest.java", src)
	expect(t, chunks, []want{{typ: TypeMethod, name: "WidgetTest.draws", start: 2, end: 5, tags: []string{"test", "decorated"}}})
}
