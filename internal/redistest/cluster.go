package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ClusterSlots is the number of hash slots of a Redis Cluster.
const ClusterSlots = 16384

// Cluster is a disposable Redis Cluster of masters without replicas, every
// node a [Server] of its own on loopback, stopped at the test's cleanup.
type Cluster struct {
	// Nodes are the masters; node i serves the slots [First(i), Last(i)].
	Nodes []*Server
}

// StartCluster starts masters redis-servers in cluster mode (each with
// its own cluster bus port, both free loopback ports), gives node i the
// i-th equal range of the 16384 slots, introduces them to each other
// (CLUSTER MEET), and waits until every node reports cluster_state:ok
// and knows every other. opts applies to every node (no password: the
// nodes would need masterauth to talk to each other). It fails the test
// on any error.
func StartCluster(t testing.TB, masters int, opts Options) *Cluster {
	t.Helper()
	if masters < 1 {
		t.Fatalf("redistest: a cluster needs a master, not %d", masters)
	}
	if opts.Password != "" || opts.TLS {
		t.Fatal("redistest: StartCluster takes no Password or TLS")
	}
	c := &Cluster{}
	var buses []int
	for range masters {
		bus, err := freePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		o := opts
		o.Config = append([]string{"cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 5000",
			"cluster-port " + strconv.Itoa(bus)}, opts.Config...)
		c.Nodes, buses = append(c.Nodes, Start(t, o)), append(buses, bus)
	}
	for i, n := range c.Nodes {
		if err := n.clusterOK("CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(c.First(i)), strconv.Itoa(c.Last(i))); err != nil {
			t.Fatalf("redistest: cluster node %d: %v", i, err)
		}
		if i > 0 {
			if err := c.Nodes[0].clusterOK("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(n.Port), strconv.Itoa(buses[i])); err != nil {
				t.Fatalf("redistest: cluster node 0 meets %d: %v", i, err)
			}
		}
	}
	want := "cluster_known_nodes:" + strconv.Itoa(masters)
	deadline := time.Now().Add(readyTimeout)
	for i, n := range c.Nodes {
		for {
			info, err := n.bulk("CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, want+"\r\n") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: cluster node %d (%s) not ready after %v: %v\n%s", i, n.Addr, readyTimeout, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// First returns the first slot of node i.
func (c *Cluster) First(i int) int { return i * ClusterSlots / len(c.Nodes) }

// Last returns the last slot of node i.
func (c *Cluster) Last(i int) int { return (i+1)*ClusterSlots/len(c.Nodes) - 1 }

// Owner returns the index of the node that serves slot.
func (c *Cluster) Owner(slot int) int {
	for i := range c.Nodes {
		if slot <= c.Last(i) {
			return i
		}
	}
	return -1
}

// clusterOK sends one command and wants +OK.
func (s *Server) clusterOK(args ...string) error {
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	reply, err := command(conn, bufio.NewReader(conn), args...)
	if err != nil {
		return err
	}
	if reply != "+OK" {
		return fmt.Errorf("%s answered %q", strings.Join(args, " "), reply)
	}
	return nil
}

// bulk sends one command and returns its bulk-string reply.
func (s *Server) bulk(args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	head, err := command(conn, r, args...)
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(head, "$"))
	if !strings.HasPrefix(head, "$") || err != nil || n < 0 {
		return "", fmt.Errorf("%s answered %q", strings.Join(args, " "), head)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return "", err
	}
	return string(body[:n]), nil
}
