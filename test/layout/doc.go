// Package layout checks rules of the repository's layout that the compiler does not:
// the product tree (api/, cmd/, internal/) holds no test support. Test helpers that
// import "testing", and everything under test/, are for _test.go files only, so a
// manager binary never links them and a reader of internal/ sees only the product.
package layout
