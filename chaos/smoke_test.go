package chaos

import (
	"context"
	"testing"
	"time"
)

func TestSmokeTopology(t *testing.T) {
	ctx := context.Background()
	if err := Available(ctx); err != nil {
		t.Skip(err)
	}
	bins, err := Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := StartCluster(ctx, ClusterConfig{Dir: t.TempDir(), Suffix: randomSuffix(), Octet: 7, Nodes: 3, Workers: 2, Lease: 5 * time.Second, Binaries: bins})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	l, f, err := c.StreamLeader(ctx)
	t.Log(l, f, err)
	time.Sleep(3 * time.Second)
}
