package move

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// metaNames are the names of a list's items.
func metaNames(list client.ObjectList) ([]string, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range items {
		a, err := meta.Accessor(o)
		if err != nil {
			return nil, err
		}
		names = append(names, a.GetName())
	}
	return names, nil
}
