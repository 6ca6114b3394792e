package search_test

import (
	"context"
	"fmt"

	"github.com/specgate/specgate/pkg/search"
	"github.com/specgate/specgate/pkg/spec"
)

func ExampleIndex_Search() {
	doc := `{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1"},
	  "paths": {
	    "/pets": {
	      "get": {"operationId": "listPets", "summary": "List all pets", "responses": {"200": {"description": "ok"}}},
	      "post": {"operationId": "createPet", "summary": "Create a pet", "responses": {"201": {"description": "ok"}}}},
	    "/pets/{petId}": {
	      "get": {"operationId": "showPetById", "summary": "Info for a specific pet", "responses": {"200": {"description": "ok"}}},
	      "delete": {"operationId": "deletePet", "summary": "Delete a pet", "responses": {"204": {"description": "ok"}}}}}}`
	s, err := spec.Parse(context.Background(), "petstore.json", []byte(doc), spec.Options{})
	if err != nil {
		panic(err)
	}
	cat, err := spec.NewCatalog(s)
	if err != nil {
		panic(err)
	}
	ix, err := search.New(cat, search.Options{})
	if err != nil {
		panic(err)
	}
	defer ix.Close()

	for _, q := range []string{"remove a pet", "show all pets", "method:POST"} {
		hits, err := ix.Search(q, 1)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-14s -> %s %s %s\n", q, hits[0].ID, hits[0].Method, hits[0].Path)
	}
	// Output:
	// remove a pet   -> petstore.deletePet DELETE /pets/{petId}
	// show all pets  -> petstore.listPets GET /pets
	// method:POST    -> petstore.createPet POST /pets
}
