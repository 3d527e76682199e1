// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 at ETCD_VERSION
// (core/model/versions.env), for the test cluster only.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
