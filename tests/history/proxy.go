package main

// A fault-injecting TCP proxy on loopback, one in front of every listener of
// every node (client and controller). Each node advertises its proxies, so
// clients, followers' fetches, Raft and heartbeats all pass through them.
// A connection's source is the process that opened it (found through
// /proc/net/tcp and /proc/<pid>/fd): a node id, or 0 for this checker's own
// clients, which are never faulted. Faults are set per (source, target) link.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LinkMode is what a proxy does with the traffic of one link.
type LinkMode int

const (
	// Pass forwards everything (after Delay, when set).
	Pass LinkMode = iota
	// BlackHole keeps connections open and forwards nothing; connections
	// that lost bytes are closed once healed (their streams are cut).
	BlackHole
	// Refuse closes the link's connections, and new ones at once.
	Refuse
)

// Link is the fault on one link.
type Link struct {
	Mode LinkMode
	// Delay is added before each forwarded chunk (a slow link).
	Delay time.Duration
}

const clientSource = 0

// Proxy forwards 127.0.0.1:Port to Target.
type Proxy struct {
	Port   int
	Target string
	ln     net.Listener
	// sources names the node that owns the socket at the far end.
	sources func(peer *net.TCPAddr, port int) (int, bool)

	mu    sync.Mutex
	links map[int]Link
	stop  atomic.Bool

	accepted, unknown atomic.Int64
}

// NewProxy listens on the given loopback port (0: any free port).
func NewProxy(port int, target string, sources func(*net.TCPAddr, int) (int, bool)) (*Proxy, error) {
	ln, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		Port:    ln.Addr().(*net.TCPAddr).Port,
		Target:  target,
		ln:      ln,
		sources: sources,
		links:   map[int]Link{},
	}
	go p.acceptLoop()
	return p, nil
}

// Set sets the fault for connections from source.
func (p *Proxy) Set(source int, l Link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.Mode == Pass && l.Delay == 0 {
		delete(p.links, source)
	} else {
		p.links[source] = l
	}
}

// HealAll removes every fault.
func (p *Proxy) HealAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.links = map[int]Link{}
}

func (p *Proxy) link(source int) Link {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.links[source]
}

// Close stops accepting; open connections close within a poll.
func (p *Proxy) Close() {
	p.stop.Store(true)
	p.ln.Close()
}

func (p *Proxy) acceptLoop() {
	for !p.stop.Load() {
		c, err := p.ln.Accept()
		if err != nil {
			if p.stop.Load() {
				return
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		p.accepted.Add(1)
		go p.serve(c.(*net.TCPConn))
	}
}

type conn struct {
	source  int
	tainted atomic.Bool
	closed  atomic.Bool
}

func (p *Proxy) serve(c *net.TCPConn) {
	c.SetNoDelay(true)
	src, ok := p.sources(c.RemoteAddr().(*net.TCPAddr), p.Port)
	if !ok {
		// Closed so that no connection escapes its source's faults: a live
		// peer connects again.
		p.unknown.Add(1)
		c.Close()
		return
	}
	cn := &conn{source: src}
	switch p.link(src).Mode {
	case Refuse:
		c.Close()
		return
	case BlackHole:
		cn.tainted.Store(true)
		go p.pump(c, nil, cn)
		return
	}
	up, err := net.DialTimeout("tcp4", p.Target, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	up.(*net.TCPConn).SetNoDelay(true)
	go p.pump(c, up.(*net.TCPConn), cn)
	go p.pump(up.(*net.TCPConn), c, cn)
}

const pollEvery = 20 * time.Millisecond

// pump copies from to to (to nil: a connection accepted while black-holed,
// which never reaches the target) under the link's fault.
func (p *Proxy) pump(from, to *net.TCPConn, cn *conn) {
	defer func() {
		cn.closed.Store(true)
		from.Close()
		if to != nil {
			to.Close()
		}
	}()
	buf := make([]byte, 64*1024)
	for !cn.closed.Load() && !p.stop.Load() {
		l := p.link(cn.source)
		if l.Mode == Refuse || (l.Mode == Pass && cn.tainted.Load()) {
			return
		}
		from.SetReadDeadline(time.Now().Add(pollEvery))
		n, err := from.Read(buf)
		if n > 0 {
			l = p.link(cn.source)
			switch {
			case l.Mode == Refuse:
				return
			case l.Mode == BlackHole || to == nil:
				cn.tainted.Store(true)
			case cn.tainted.Load():
				return
			default:
				if l.Delay > 0 {
					time.Sleep(l.Delay)
				}
				to.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, werr := to.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // EOF or a reset
		}
	}
}

// ownerPID gives the process among pids that holds the local end of the TCP
// connection from peer to 127.0.0.1:port (IPv4, or IPv4-mapped on an IPv6
// socket, as the JVM opens them).
func ownerPID(peer *net.TCPAddr, port int, pids []int) (int, bool) {
	ip4 := peer.IP.To4()
	if ip4 == nil {
		return 0, false
	}
	v4 := fmt.Sprintf("%08X", binary.LittleEndian.Uint32(ip4))
	inode := ""
	for _, table := range []struct{ path, addr string }{
		{"/proc/net/tcp", v4},
		{"/proc/net/tcp6", "0000000000000000FFFF0000" + v4},
	} {
		if inode = socketInode(table.path, fmt.Sprintf("%s:%04X", table.addr, peer.Port), port); inode != "" {
			break
		}
	}
	if inode == "" {
		return 0, false
	}
	want := "socket:[" + inode + "]"
	for _, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == want {
				return pid, true
			}
		}
	}
	return 0, false
}

// socketInode finds, in a /proc/net/tcp{,6} table, the inode of the socket
// whose local address is local and whose remote port is port.
func socketInode(path, local string, port int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[1] != local {
			continue
		}
		i := strings.LastIndexByte(fs[2], ':')
		rp, err := strconv.ParseUint(fs[2][i+1:], 16, 16)
		if err == nil && int(rp) == port {
			return fs[9]
		}
	}
	return ""
}
