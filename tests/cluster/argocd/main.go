// A slim Argo CD for the e2e tier: only the application-controller, the repo-server, the git
// ask-pass helper the repo-server calls, and a loopback Redis (miniredis, already in Argo CD's
// module graph) that both of them need. Upstream's cmd/main.go picks the command by the binary's
// name; this one takes it as the first argument, and links about half of the packages.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/alicebob/miniredis/v2"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/util/log"
)

func main() {
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
	// Upstream's main also calls grpc.DisableSRVLookups(), a workaround against DNS SRV
	// lookups that panics with the grpc version the served gitops-engine pulls in; every
	// address here is a loopback IP, so nothing is looked up.
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: argocd application-controller|repo-server|git-ask-pass|redis ADDR [flags]")
		os.Exit(2)
	}
	var command *cobra.Command
	switch os.Args[1] {
	case "application-controller":
		command = appcontroller.NewCommand()
	case "repo-server":
		command = reposerver.NewCommand()
	case "git-ask-pass":
		command = gitaskpass.NewCommand()
	case "redis":
		os.Exit(serveRedis(os.Args[2:]))
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	command.SetArgs(os.Args[2:])
	if err := command.Execute(); err != nil {
		os.Exit(1)
	}
}

// serveRedis runs miniredis on the given loopback address until SIGTERM or SIGINT.
func serveRedis(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: argocd redis 127.0.0.1:PORT")
		return 2
	}
	server := miniredis.NewMiniRedis()
	if err := server.StartAddr(args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "redis: %v\n", err)
		return 1
	}
	fmt.Printf("redis listening on %s\n", server.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	server.Close()
	return 0
}
