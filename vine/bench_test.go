package vine

import (
	"fmt"
	"testing"
)

// BenchmarkParseValidateNext10k is the headline number: parse, validate and
// compute the frontier of a generated 10,000-node graph (goal < 20 ms).
func BenchmarkParseValidateNext10k(b *testing.B) {
	text := genText(10000, 3)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		g, err := Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		if err := Validate(g); err != nil {
			b.Fatal(err)
		}
		_ = Next(g)
	}
}

func BenchmarkParse10k(b *testing.B) {
	text := genText(10000, 3)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate10k(b *testing.B) {
	g := genGraph(10000, 3)
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(g); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNext10k(b *testing.B) {
	g := genGraph(10000, 3)
	b.ReportAllocs()
	for b.Loop() {
		_ = Next(g)
	}
}

func BenchmarkSerialize10k(b *testing.B) {
	g := genGraph(10000, 3)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Serialize(g); err != nil {
			b.Fatal(err)
		}
	}
}

// batchOps returns 1,000 valid operations on genGraph(1000, 3): 200 rounds of
// add_task, set_status, claim, add_dep and update.
func batchOps() []Op {
	ops := make([]Op, 0, 1000)
	for k := range 200 {
		id, leaf := fmt.Sprintf("n%d", k), fmt.Sprintf("t%d", 500+k)
		ops = append(ops,
			Op{Op: OpAddTask, ID: id, Name: "New " + id, DependsOn: []string{leaf}},
			Op{Op: OpSetStatus, ID: leaf, Status: StatusComplete},
			Op{Op: OpClaim, ID: id},
			Op{Op: OpAddDep, TaskID: fmt.Sprintf("t%d", k), DepID: id},
			Op{Op: OpUpdate, ID: id, Decisions: []string{"picked " + leaf}, Attachments: []Attachment{{ClassArtifact, "text/plain", "./" + id + ".txt"}}},
		)
	}
	return ops
}

// BenchmarkApply1000Ops applies a 1,000-operation batch to a 1,000-node graph.
func BenchmarkApply1000Ops(b *testing.B) {
	g := genGraph(1000, 3)
	ops := batchOps()
	if _, err := Apply(g, ops); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Apply(g, ops); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApply1000OpsOn10k applies the same batch to a 10,000-node graph.
func BenchmarkApply1000OpsOn10k(b *testing.B) {
	g := genGraph(10000, 3)
	ops := batchOps()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Apply(g, ops); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyOneOp10k is the cost of folding one set_status into a
// 10,000-node graph (index, copy-on-write, validation).
func BenchmarkApplyOneOp10k(b *testing.B) {
	g := genGraph(10000, 3)
	ops := []Op{{Op: OpSetStatus, ID: "t42", Status: StatusReviewing}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Apply(g, ops); err != nil {
			b.Fatal(err)
		}
	}
}
