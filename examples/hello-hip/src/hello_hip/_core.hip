// The device side of hello-hip: saxpy on the GPU, and the questions Python
// needs answered without one (which devices, which targets were compiled).
// Nothing touches the HIP runtime at import, so the module loads on machines
// with no GPU or no /dev/kfd; the functions then raise NoDeviceError.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <hip/hip_runtime.h>

#include <vector>

#ifndef HELLO_HIP_TARGETS
#define HELLO_HIP_TARGETS ""
#endif

__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

static PyObject* NoDeviceError = nullptr;

// Errors that mean "nothing to run on" rather than a bug.
static bool is_no_device(hipError_t err) {
  return err == hipErrorNoDevice || err == hipErrorInsufficientDriver ||
         err == hipErrorNoBinaryForGpu || err == hipErrorInvalidDevice ||
         err == hipErrorNotInitialized;
}

static PyObject* raise_hip(hipError_t err, const char* what) {
  PyErr_Format(is_no_device(err) ? NoDeviceError : PyExc_RuntimeError, "%s failed: %s", what,
               hipGetErrorName(err));
  return nullptr;
}

static PyObject* devices(PyObject*, PyObject*) {
  int count = 0;
  hipError_t err = hipGetDeviceCount(&count);
  if (err != hipSuccess) return raise_hip(err, "hipGetDeviceCount");
  PyObject* out = PyList_New(0);
  for (int i = 0; out && i < count; ++i) {
    hipDeviceProp_t prop;
    err = hipGetDeviceProperties(&prop, i);
    if (err != hipSuccess) {
      Py_DECREF(out);
      return raise_hip(err, "hipGetDeviceProperties");
    }
    PyObject* item = Py_BuildValue("(iss)", i, prop.name, prop.gcnArchName);
    if (!item || PyList_Append(out, item) < 0) {
      Py_XDECREF(item);
      Py_DECREF(out);
      return nullptr;
    }
    Py_DECREF(item);
  }
  return out;
}

static bool to_floats(PyObject* seq, std::vector<float>& out, const char* name) {
  PyObject* fast = PySequence_Fast(seq, name);
  if (!fast) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  out.resize(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
    if (v == -1.0 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return false;
    }
    out[i] = static_cast<float>(v);
  }
  Py_DECREF(fast);
  return true;
}

static PyObject* saxpy(PyObject*, PyObject* args) {
  float a;
  PyObject *xs, *ys;
  if (!PyArg_ParseTuple(args, "fOO:saxpy", &a, &xs, &ys)) return nullptr;
  std::vector<float> x, y;
  if (!to_floats(xs, x, "x must be a sequence of numbers") ||
      !to_floats(ys, y, "y must be a sequence of numbers"))
    return nullptr;
  if (x.size() != y.size()) {
    PyErr_SetString(PyExc_ValueError, "x and y must have the same length");
    return nullptr;
  }
  int n = static_cast<int>(x.size());
  float *dx = nullptr, *dy = nullptr;
  hipError_t err = hipMalloc(&dx, n * sizeof(float) + 1);
  if (err == hipSuccess) err = hipMalloc(&dy, n * sizeof(float) + 1);
  if (err == hipSuccess) err = hipMemcpy(dx, x.data(), n * sizeof(float), hipMemcpyHostToDevice);
  if (err == hipSuccess) err = hipMemcpy(dy, y.data(), n * sizeof(float), hipMemcpyHostToDevice);
  if (err == hipSuccess && n > 0) {
    const int block = 256;
    hipLaunchKernelGGL(saxpy_kernel, dim3((n + block - 1) / block), dim3(block), 0, 0, n, a, dx, dy);
    err = hipGetLastError();
  }
  if (err == hipSuccess) err = hipMemcpy(y.data(), dy, n * sizeof(float), hipMemcpyDeviceToHost);
  hipFree(dx);
  hipFree(dy);
  if (err != hipSuccess) return raise_hip(err, "saxpy");
  PyObject* out = PyList_New(n);
  for (int i = 0; out && i < n; ++i) PyList_SET_ITEM(out, i, PyFloat_FromDouble(y[i]));
  return out;
}

static PyObject* runtime_version(PyObject*, PyObject*) {
  int version = 0;
  hipError_t err = hipRuntimeGetVersion(&version);
  if (err != hipSuccess) return raise_hip(err, "hipRuntimeGetVersion");
  return PyLong_FromLong(version);
}

static PyMethodDef methods[] = {
    {"devices", devices, METH_NOARGS, "[(index, name, gcnArchName)] of the visible HIP devices."},
    {"saxpy", saxpy, METH_VARARGS, "saxpy(a, x, y) -> a*x + y, computed on device 0."},
    {"runtime_version", runtime_version, METH_NOARGS, "HIP runtime version number."},
    {nullptr, nullptr, 0, nullptr},
};

static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", "hello-hip's HIP kernels.", -1, methods};

PyMODINIT_FUNC PyInit__core(void) {
  PyObject* m = PyModule_Create(&module);
  if (!m) return nullptr;
  NoDeviceError = PyErr_NewException("hello_hip.NoDeviceError", PyExc_RuntimeError, nullptr);
  if (!NoDeviceError || PyModule_AddObject(m, "NoDeviceError", NoDeviceError) < 0 ||
      PyModule_AddStringConstant(m, "TARGETS", HELLO_HIP_TARGETS) < 0) {
    Py_XDECREF(NoDeviceError);
    Py_DECREF(m);
    return nullptr;
  }
  Py_INCREF(NoDeviceError);
  return m;
}
