package spec_test

import (
	"context"
	"fmt"

	"github.com/specgate/specgate/pkg/spec"
)

func ExampleLoadCatalog() {
	l, err := spec.LoadCatalog(context.Background(), []spec.Source{
		{Location: "../../testdata/petstore-v3.yaml", Options: spec.Options{Name: "petstore"}},
		{Location: "../../testdata/missing.yaml", Options: spec.Options{Name: "gone"}},
	}, spec.CatalogOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Catalog.Len(), "endpoints")
	for _, f := range l.Failures {
		fmt.Println("not loaded:", f.Spec)
	}
	// Output:
	// 19 endpoints
	// not loaded: gone
}
