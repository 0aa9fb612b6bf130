package vine

import "fmt"

// genGraph builds a valid graph of n tasks: node i depends on nodes
// i*fan+1 .. i*fan+fan (a tree; fan 1 is a chain) plus, for variety, on node
// i+fan+7 when it exists. Statuses cycle through all six values.
func genGraph(n, fan int) Graph {
	statuses := Statuses()
	g := Graph{Metadata: map[string]string{MetaTitle: "Generated"}, Nodes: make([]Node, n)}
	for i := range n {
		node := Node{
			ID:          fmt.Sprintf("t%d", i),
			Kind:        KindTask,
			ShortName:   fmt.Sprintf("Task number %d", i),
			Status:      statuses[i%len(statuses)],
			Description: fmt.Sprintf("Generated task %d.\nIt has two description lines.", i),
		}
		for k := 1; k <= fan; k++ {
			if j := i*fan + k; j < n {
				node.Dependencies = append(node.Dependencies, fmt.Sprintf("t%d", j))
			}
		}
		if j := i + fan + 7; fan > 1 && j < n {
			node.Dependencies = append(node.Dependencies, fmt.Sprintf("t%d", j))
		}
		if i%3 == 0 {
			node.Decisions = []string{fmt.Sprintf("decision for %d", i)}
		}
		if i%5 == 0 {
			node.Attachments = []Attachment{{ClassArtifact, "text/plain", fmt.Sprintf("./out/%d.txt", i)}}
		}
		canonicalize(&node)
		g.Nodes[i] = node
	}
	return g
}

// genText serializes genGraph(n, fan).
func genText(n, fan int) string {
	s, err := Serialize(genGraph(n, fan))
	if err != nil {
		panic(err)
	}
	return s
}
