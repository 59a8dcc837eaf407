package main

// A three-node cluster of Fjord or Apache Kafka 4.4 (combined
// broker+controller nodes) on loopback, every listener behind a Proxy.

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Settings every node of both brokers gets: Kafka's proportions with shorter
// timeouts, so a fault's effects (fencing, ISR shrink, elections) show within
// a few seconds; the internal topics replicated like the data.
var commonSettings = []string{
	"broker.session.timeout.ms=6000",
	"broker.heartbeat.interval.ms=500",
	"replica.lag.time.max.ms=10000",
	"controller.quorum.election.timeout.ms=1000",
	"offsets.topic.replication.factor=3",
	"offsets.topic.num.partitions=3",
	"transaction.state.log.replication.factor=3",
	"transaction.state.log.min.isr=2",
	"transaction.state.log.num.partitions=3",
	"group.initial.rebalance.delay.ms=0",
}

// sessionTimeout is broker.session.timeout.ms above.
const sessionTimeout = 6 * time.Second

// Node is one broker+controller process.
type Node struct {
	ID                  int
	Dir                 string
	dataDir             string
	ClientPort, CtlPort int
	ClientProxy         *Proxy
	CtlProxy            *Proxy

	mu     sync.Mutex
	pid    int
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	starts int
}

// Cluster is three nodes of one broker kind.
type Cluster struct {
	Kind     string // "fjord" or "kafka"
	Nodes    []*Node
	Work     string
	FjordBin string
	Peer     string // scripts/peers/kafka
	// TmpfsNode is the node whose data dir is a tmpfs (0: none).
	TmpfsNode int
	TmpfsNote string
	clusterID string
}

// ephemeralLow is the lowest port the kernel hands to outgoing connections
// and to binds of port 0 (ip_local_port_range; 32768 when unreadable).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if low, err := strconv.Atoi(f[0]); err == nil && low > 2048 {
				return low
			}
		}
	}
	return 32768
}

// usedPorts are the ports freePort gave in this process.
var usedPorts = map[int]bool{}

// freePort gives a port that is free now and below the kernel's ephemeral
// range, so no outgoing connection (a proxy's, a client's, another node's)
// and no bind of port 0 can take it before the node binds it: a port from
// the ephemeral range once went to another connection in that gap and the
// node failed to start with "Address already in use".
func freePort() int {
	low := ephemeralLow()
	base := low / 2
	for try := 0; try < 1000; try++ {
		var b [2]byte
		rand.Read(b[:])
		p := base + (int(b[0])<<8|int(b[1]))%(low-base)
		if usedPorts[p] {
			continue
		}
		ln, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		usedPorts[p] = true
		return p
	}
	return 0
}

func kafkaUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// NewCluster lays out three nodes under work and starts their proxies.
func NewCluster(kind, work, fjordBin, peer string, tmpfsNode int, tmpfsSize string) (*Cluster, error) {
	c := &Cluster{Kind: kind, Work: work, FjordBin: fjordBin, Peer: peer, clusterID: kafkaUUID()}
	for id := 1; id <= 3; id++ {
		n := &Node{ID: id, Dir: filepath.Join(work, fmt.Sprintf("n%d", id)), ClientPort: freePort(), CtlPort: freePort()}
		n.dataDir = filepath.Join(n.Dir, "data")
		if id == tmpfsNode {
			// The tmpfs is mounted on disk/, the log dir inside it, so a
			// filler file sits beside the log dir, not in it.
			n.dataDir = filepath.Join(n.Dir, "disk", "data")
		}
		if err := os.MkdirAll(filepath.Dir(n.dataDir), 0o755); err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	for _, n := range c.Nodes {
		var err error
		if n.ClientProxy, err = NewProxy(0, fmt.Sprintf("127.0.0.1:%d", n.ClientPort), c.source); err != nil {
			return nil, err
		}
		if n.CtlProxy, err = NewProxy(0, fmt.Sprintf("127.0.0.1:%d", n.CtlPort), c.source); err != nil {
			return nil, err
		}
	}
	if tmpfsNode > 0 {
		dir := filepath.Dir(c.DataDir(tmpfsNode))
		out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+tmpfsSize, "tmpfs", dir).CombinedOutput()
		if err != nil {
			c.TmpfsNote = fmt.Sprintf("could not mount a tmpfs on node %d's data dir: %v %s", tmpfsNode, err, strings.TrimSpace(string(out)))
		} else {
			c.TmpfsNode = tmpfsNode
		}
	}
	for _, n := range c.Nodes {
		if err := os.MkdirAll(n.dataDir, 0o755); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// source names the node (or 0: this process) owning a proxied connection.
func (c *Cluster) source(peer *net.TCPAddr, port int) (int, bool) {
	pids := map[int]int{}
	var list []int
	for _, n := range c.Nodes {
		if pid := n.Pid(); pid > 0 {
			pids[pid] = n.ID
			list = append(list, pid)
		}
	}
	me := os.Getpid()
	pids[me] = clientSource
	list = append(list, me)
	for try := 0; try < 3; try++ {
		if pid, ok := ownerPID(peer, port, list); ok {
			return pids[pid], true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, false
}

// DataDir is node id's log directory.
func (c *Cluster) DataDir(id int) string { return c.Nodes[id-1].dataDir }

// Node gives node id.
func (c *Cluster) Node(id int) *Node { return c.Nodes[id-1] }

// Bootstrap lists the client proxies.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, fmt.Sprintf("127.0.0.1:%d", n.ClientProxy.Port))
	}
	return out
}

func (c *Cluster) voters() string {
	var v []string
	for _, n := range c.Nodes {
		v = append(v, fmt.Sprintf("%d@127.0.0.1:%d", n.ID, n.CtlProxy.Port))
	}
	return strings.Join(v, ",")
}

// Pid is the node's process id while it runs (0 otherwise).
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pid
}

// Alive says whether the node's process runs (paused counts as running).
func (n *Node) Alive() bool {
	pid := n.Pid()
	if pid == 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// Paused says whether the node was SIGSTOPped and not resumed.
func (n *Node) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused
}

func (c *Cluster) props(n *Node) []string {
	p := []string{
		"process.roles=broker,controller",
		fmt.Sprintf("node.id=%d", n.ID),
		"controller.quorum.voters=" + c.voters(),
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.ClientPort, n.CtlPort),
		fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d", n.ClientProxy.Port),
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs=" + c.DataDir(n.ID),
	}
	return append(p, commonSettings...)
}

// Start formats (first time) and starts every node, and waits until each
// serves.
func (c *Cluster) Start() error {
	if c.Kind == "fjord" {
		for _, n := range c.Nodes {
			pf := filepath.Join(n.Dir, "server.properties")
			if err := os.WriteFile(pf, []byte(strings.Join(c.props(n), "\n")+"\n"), 0o644); err != nil {
				return err
			}
			out, err := exec.Command(c.FjordBin, "format", "--config", pf, "--cluster-id", c.clusterID).CombinedOutput()
			if err != nil {
				return fmt.Errorf("fjord format node %d: %v %s", n.ID, err, out)
			}
		}
	}
	errs := make(chan error, len(c.Nodes))
	for _, n := range c.Nodes {
		go func(n *Node) { errs <- c.StartNode(n.ID) }(n)
	}
	var first error
	for range c.Nodes {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (c *Cluster) kafkaEnv(n *Node) []string {
	return append(os.Environ(),
		"KAFKA_PEER_HOME="+n.Dir,
		fmt.Sprintf("KAFKA_PEER_PORT=%d", n.ClientPort),
		fmt.Sprintf("KAFKA_PEER_CONTROLLER_PORT=%d", n.CtlPort),
		"KAFKA_PEER_CLUSTER_ID="+c.clusterID,
		"KAFKA_HEAP_OPTS=-Xmx512m -Xms512m",
	)
}

func accepting(port int) bool {
	conn, err := net.DialTimeout("tcp4", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// StartNode starts node id (again) and waits until its client listener
// accepts connections.
func (c *Cluster) StartNode(id int) error {
	n := c.Node(id)
	if c.Kind == "kafka" {
		verb := "restart"
		args := []string{}
		n.mu.Lock()
		first := n.starts == 0
		n.starts++
		n.mu.Unlock()
		if first {
			verb = "start"
			args = c.props(n)[1:] // process.roles is the script's own
		}
		pidFile := filepath.Join(n.Dir, "kafka.pid")
		os.Remove(pidFile) // a killed broker's; the proxies must know the new one at once
		cmd := exec.Command(c.Peer, append([]string{verb}, args...)...)
		cmd.Env = c.kafkaEnv(n)
		done := make(chan struct{})
		go func() {
			// The nodes connect to each other while they start: name the
			// new process as soon as the script wrote its PID.
			for {
				select {
				case <-done:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if b, err := os.ReadFile(pidFile); err == nil {
					if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
						n.mu.Lock()
						n.pid = pid
						n.mu.Unlock()
						return
					}
				}
			}
		}()
		out, err := cmd.CombinedOutput()
		close(done)
		if err != nil {
			return fmt.Errorf("kafka node %d %s: %v %s", id, verb, err, lastLines(string(out), 20))
		}
		b, err := os.ReadFile(filepath.Join(n.Dir, "kafka.pid"))
		if err != nil {
			return err
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		n.mu.Lock()
		n.pid = pid
		n.paused = false
		n.mu.Unlock()
		return nil
	}
	pf := filepath.Join(n.Dir, "server.properties")
	for attempt := 0; attempt < 10; attempt++ {
		n.mu.Lock()
		n.starts++
		run := n.starts
		n.mu.Unlock()
		logPath := filepath.Join(n.Dir, fmt.Sprintf("broker-%d.log", run))
		lf, err := os.Create(logPath)
		if err != nil {
			return err
		}
		cmd := exec.Command(c.FjordBin, "serve", "--config", pf, "--shards", "1")
		cmd.Stdout, cmd.Stderr = lf, lf
		cmd.Env = append(os.Environ(), "RUST_LOG=warn")
		if err := cmd.Start(); err != nil {
			lf.Close()
			return err
		}
		exited := make(chan struct{})
		n.mu.Lock()
		n.cmd, n.pid, n.exited, n.paused = cmd, cmd.Process.Pid, exited, false
		n.mu.Unlock()
		go func() { cmd.Wait(); lf.Close(); close(exited) }()
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				b, _ := os.ReadFile(logPath)
				n.mu.Lock()
				n.pid = 0
				n.mu.Unlock()
				if strings.Contains(string(b), "in use") {
					time.Sleep(time.Second)
					goto retry
				}
				return fmt.Errorf("fjord node %d exited at start: %s", id, lastLines(string(b), 20))
			default:
			}
			if accepting(n.ClientPort) {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("fjord node %d did not listen within 90 s", id)
	retry:
	}
	return fmt.Errorf("fjord node %d: its ports stayed in use", id)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// Kill sends SIGKILL (resuming a paused node first is not needed: SIGKILL
// ends a stopped process too) and waits until the process is gone.
func (c *Cluster) Kill(id int) {
	n := c.Node(id)
	pid := n.Pid()
	if pid == 0 {
		return
	}
	syscall.Kill(pid, syscall.SIGKILL)
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	if exited != nil {
		<-exited
	} else {
		for n.Alive() {
			time.Sleep(50 * time.Millisecond)
		}
	}
	n.mu.Lock()
	n.pid, n.paused = 0, false
	n.mu.Unlock()
}

// Terminate sends SIGTERM and waits for the exit, then SIGKILL after limit.
func (c *Cluster) Terminate(id int, limit time.Duration) {
	n := c.Node(id)
	pid := n.Pid()
	if pid == 0 {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(limit)
	for n.Alive() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	c.Kill(id)
}

// Pause sends SIGSTOP; Resume sends SIGCONT.
func (c *Cluster) Pause(id int) {
	n := c.Node(id)
	if pid := n.Pid(); pid > 0 {
		syscall.Kill(pid, syscall.SIGSTOP)
		n.mu.Lock()
		n.paused = true
		n.mu.Unlock()
	}
}

// Resume continues a paused node.
func (c *Cluster) Resume(id int) {
	n := c.Node(id)
	if pid := n.Pid(); pid > 0 {
		syscall.Kill(pid, syscall.SIGCONT)
	}
	n.mu.Lock()
	n.paused = false
	n.mu.Unlock()
}

// SetLink sets the fault on traffic from node `from` to node `to` (both of
// to's listeners).
func (c *Cluster) SetLink(from, to int, l Link) {
	c.Node(to).ClientProxy.Set(from, l)
	c.Node(to).CtlProxy.Set(from, l)
}

// HealAll removes every link fault.
func (c *Cluster) HealAll() {
	for _, n := range c.Nodes {
		n.ClientProxy.HealAll()
		n.CtlProxy.HealAll()
	}
}

// Stop ends every node (SIGTERM, then SIGKILL) and the proxies, and
// unmounts the tmpfs.
func (c *Cluster) Stop() {
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		wg.Add(1)
		go func(n *Node) {
			defer wg.Done()
			c.Resume(n.ID)
			if c.Kind == "kafka" && n.Pid() > 0 {
				cmd := exec.Command(c.Peer, "kill")
				cmd.Env = c.kafkaEnv(n)
				cmd.Run()
				return
			}
			if pid := n.Pid(); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
				c.Kill(n.ID)
			}
		}(n)
	}
	wg.Wait()
	for _, n := range c.Nodes {
		n.ClientProxy.Close()
		n.CtlProxy.Close()
	}
	if c.TmpfsNode > 0 {
		exec.Command("umount", "-l", filepath.Dir(c.DataDir(c.TmpfsNode))).Run()
	}
}
