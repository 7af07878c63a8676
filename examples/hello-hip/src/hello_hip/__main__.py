from hello_hip import status

print(status())
