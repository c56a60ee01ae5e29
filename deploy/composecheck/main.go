// composecheck loads compose files the way `docker compose config` does (compose-go: the
// Compose Specification JSON schema, interpolation, normalisation, later files merged over
// earlier ones as with several -f), without a Docker engine or the compose CLI plugin, and
// prints the resolved project as JSON.
//
//	composecheck COMPOSE_FILE [COMPOSE_FILE...] ENV_FILE
//
// Only ENV_FILE supplies variables (the process environment is ignored), so results do not
// depend on the caller's shell. Exit 1 with the loader's message when a file is invalid.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: composecheck COMPOSE_FILE [COMPOSE_FILE...] ENV_FILE")
		os.Exit(2)
	}
	last := len(os.Args) - 1
	opts, err := cli.NewProjectOptions(
		os.Args[1:last],
		cli.WithEnvFiles(os.Args[last]),
		cli.WithDotEnv,
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := project.MarshalJSON()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
