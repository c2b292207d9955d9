package minisystemd

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procInfo is what the supervisor needs of /proc/<pid>/stat.
type procInfo struct {
	pid, ppid, sid int
	state          byte
}

// readProcStat parses /proc/<pid>/stat. The command name may contain spaces
// and parentheses, so fields are taken after the last ')'.
func readProcStat(pid int) (procInfo, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(s[i+1:])
	// f[0]=state f[1]=ppid f[2]=pgrp f[3]=session
	if len(f) < 4 || len(f[0]) == 0 {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	sid, _ := strconv.Atoi(f[3])
	return procInfo{pid: pid, ppid: ppid, sid: sid, state: f[0][0]}, true
}

func allProcs() []procInfo {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProcStat(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// unitProcs lists the processes that belong to a unit whose main process is
// main: its descendants by parent chain, plus any process still in the
// session the supervisor made for it (descendants that were re-parented to
// the supervisor keep that session unless they left it). This stands in for
// systemd's cgroup membership. main itself is excluded. Zombies are skipped.
func unitProcs(main int) []int {
	procs := allProcs()
	children := map[int][]int{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	member := map[int]bool{}
	stack := []int{main}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range children[pid] {
			if !member[c] {
				member[c] = true
				stack = append(stack, c)
			}
		}
	}
	var out []int
	for _, p := range procs {
		if p.pid == main || p.state == 'Z' {
			continue
		}
		if member[p.pid] || p.sid == main {
			out = append(out, p.pid)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	p, ok := readProcStat(pid)
	return ok && p.state != 'Z'
}

func signalAll(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
}
