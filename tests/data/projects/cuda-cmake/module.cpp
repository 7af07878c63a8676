#include <Python.h>
#include <cuda_runtime.h>

extern "C" int cudacmk_add_one(int n);

static PyObject* devices(PyObject*, PyObject*) {
  int n = 0;
  return PyLong_FromLong(cudaGetDeviceCount(&n) == cudaSuccess ? n : -1);
}
static PyObject* add_one(PyObject*, PyObject* arg) { return PyLong_FromLong(cudacmk_add_one(PyLong_AsLong(arg))); }
static PyMethodDef methods[] = {{"devices", devices, METH_NOARGS, nullptr}, {"add_one", add_one, METH_O, nullptr},
                                {nullptr, nullptr, 0, nullptr}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "_cudacmk", nullptr, -1, methods};
PyMODINIT_FUNC PyInit__cudacmk(void) { return PyModule_Create(&def); }
